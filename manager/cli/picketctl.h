// picketctl, the operator's CLI: argument parsing, the FleetAdmin client and output formatting
// (aligned tables or one JSON document per command). main.cc only calls run(); tests call run()
// with their own streams and the formatting functions with canned responses.
// Single-threaded: one invocation runs on the caller's thread; no function keeps global state.
#pragma once

#include <chrono>
#include <cstdint>
#include <iosfwd>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <grpcpp/grpcpp.h>
#include <nlohmann/json.hpp>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "picket/v1/picket.grpc.pb.h"
#include "picket/v1/picket.pb.h"

namespace picket::manager::cli {

// Exit codes: scripts depend on them.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailed = 1;  // RPC error, local operation failed, target not applied
inline constexpr int kExitUsage = 2;   // bad arguments, bad selector syntax, missing file / DIR

// Runs one invocation (argv[0] is the program name). Results (and, without --json, --wait
// progress lines) go to `out`, errors to `err`. Returns the exit code. Never throws.
int run(int argc, const char* const argv[], std::ostream& out, std::ostream& err);

// ---------------------------------------------------------------------------------------
// Connection

struct ConnectOptions {
    std::string manager;  // host:port, [v6]:port, unix:/path
    std::string token;    // admin bearer token (already read from --token-file)
    std::string ca_file;
    std::string cert_file;
    std::string key_file;
    bool insecure = false;
};

// True when every address the target can resolve to is on this host: 127.0.0.0/8, ::1,
// ::ffff:127.x.x.x, "localhost", or a unix: socket. Accepts an optional dns:/// or
// ipv4:/ipv6: prefix. Anything unparsable is not loopback.
bool is_loopback_target(std::string_view target);

// Insecure channel (loopback only) or TLS with the fleet CA (and a client certificate when
// cert and key are given; checked with pki::load_credentials). InvalidArgument when
// --insecure is used with a non-loopback address or the TLS options are incomplete;
// the pki error when files are missing or do not match.
absl::StatusOr<std::shared_ptr<grpc::Channel>> make_channel(const ConnectOptions& options);

// grpc::Status -> absl::Status (same codes).
absl::Status to_absl(const grpc::Status& status);
// "NOT_FOUND: bundle version 7 not found"
std::string status_text(const absl::Status& status);

// ---------------------------------------------------------------------------------------
// Names and values as printed

std::string_view target_state_name(picket::v1::TargetState state);  // "applied", ...
std::string_view deployment_state_name(picket::v1::DeploymentState state);
std::string_view deployment_kind_name(picket::v1::DeploymentKind kind);
std::string_view capture_mode_name(picket::v1::CaptureMode mode);
std::string_view change_kind_name(picket::v1::ChangeKind kind);
std::string_view alert_action_name(picket::v1::AlertAction action);  // "allowed", "blocked"
// RFC 3339 UTC with seconds ("2026-11-29T23:56:05Z"); "-" for 0.
std::string format_time(int64_t unix_ns);
// "et-open@42", "-" for version 0.
std::string format_bundle_ref(const picket::v1::BundleRef& ref);
// "1.5 KiB"
std::string format_bytes(uint64_t bytes);

// Columns padded to the widest cell, two spaces apart, trailing spaces trimmed, one line per
// row ending in '\n'. Rows shorter than the header are padded with empty cells.
std::string render_table(const std::vector<std::string>& header,
                         const std::vector<std::vector<std::string>>& rows);

// A target is final when applied, rejected, timed out or cancelled.
bool target_final(picket::v1::TargetState state);
// Every target final (or the deployment itself succeeded / failed / rolled back).
bool deployment_final(const picket::v1::Deployment& deployment);
// Every target applied (and at least one target).
bool deployment_all_applied(const picket::v1::Deployment& deployment);

// ---------------------------------------------------------------------------------------
// Output documents. *_json is what --json prints (one document); *_text the human form.

nlohmann::json sensors_json(const picket::v1::ListSensorsResponse& response);
std::string sensors_text(const picket::v1::ListSensorsResponse& response);

nlohmann::json sensor_json(const picket::v1::GetSensorResponse& response);
std::string sensor_text(const picket::v1::GetSensorResponse& response);

// {"name", "revoked_now", "disconnected", "revoked_at"}; "revoked sensor NAME (stream closed)".
nlohmann::json revoke_json(const picket::v1::RevokeSensorResponse& response);
std::string revoke_text(const picket::v1::RevokeSensorResponse& response);

// Bootstrap tokens (`enroll token create|list|revoke`) and `sensor readmit`. create's text is
// the token alone on one line (for `> file`); its --json adds the token's facts.
nlohmann::json bootstrap_token_json(const picket::v1::BootstrapTokenInfo& token);
nlohmann::json token_create_json(const picket::v1::CreateBootstrapTokenResponse& response);
std::string token_create_text(const picket::v1::CreateBootstrapTokenResponse& response);
nlohmann::json tokens_json(const picket::v1::ListBootstrapTokensResponse& response);
std::string tokens_text(const picket::v1::ListBootstrapTokensResponse& response);
nlohmann::json token_revoke_json(const picket::v1::RevokeBootstrapTokenResponse& response);
std::string token_revoke_text(const picket::v1::RevokeBootstrapTokenResponse& response);
nlohmann::json readmit_json(const picket::v1::ReadmitSensorResponse& response);
std::string readmit_text(const picket::v1::ReadmitSensorResponse& response);

nlohmann::json push_json(const picket::v1::PushBundleResponse& response,
                         const picket::v1::Manifest& pushed);
std::string push_text(const picket::v1::PushBundleResponse& response,
                      const picket::v1::Manifest& pushed);

nlohmann::json bundle_summary_json(const picket::v1::BundleSummary& summary);
nlohmann::json bundles_json(const picket::v1::ListBundlesResponse& response);
std::string bundles_text(const picket::v1::ListBundlesResponse& response);

nlohmann::json bundle_json(const picket::v1::GetBundleResponse& response);
std::string bundle_text(const picket::v1::GetBundleResponse& response);

nlohmann::json diff_json(const picket::v1::BundleDiff& diff);
std::string diff_text(const picket::v1::BundleDiff& diff);

// {"deployment": id, "kind", "version", "selector", "state", "message", ..., "targets":
// [{"sensor", "state", "version", "error", "previous_version", "canary", ...}]}
nlohmann::json deployment_json(const picket::v1::Deployment& deployment);
std::string deployment_text(const picket::v1::Deployment& deployment);

nlohmann::json history_json(const picket::v1::HistoryResponse& response);
std::string history_text(const picket::v1::HistoryResponse& response);

// {"alerts": [{"sensor", "time", "timestamp" (Unix ns), "gid", "sid", "rev", "msg", "src_ip",
// "src_port", "dst_ip", "dst_port", "proto", "action", "severity", "bundle_version"}],
// "total_received", "dropped_by_sensors"}
nlohmann::json alerts_json(const picket::v1::ListAlertsResponse& response);
// Table (newest first as received), then one line with the manager's totals.
std::string alerts_text(const picket::v1::ListAlertsResponse& response);

// ---- rules (rules_format.cc)

// A per-sid change of an update, as operators name it: "added", "removed", "enabled",
// "disabled", "action" (only the action word changed, e.g. alert -> drop) or "modified".
std::string_view rule_change_kind(const picket::v1::RuleDiff& diff, bool added, bool removed);

nlohmann::json rule_source_json(const picket::v1::RuleSource& source);
nlohmann::json rule_sources_json(const picket::v1::ListRuleSourcesResponse& response);
std::string rule_sources_text(const picket::v1::ListRuleSourcesResponse& response);

// {"files": [{"name", "content", "updated_at"}]}; text: each file under a "== NAME ==" line.
nlohmann::json rule_policy_json(const picket::v1::GetRulePolicyResponse& response);
std::string rule_policy_text(const picket::v1::GetRulePolicyResponse& response);

// {"version" (null when nothing changed), "sha256", "message", "sources": [...], "rules",
// "rules_enabled", "policy": {"enabled", "disabled", "dropped", "modified"}, "unsupported",
// "unsupported_rules", "warnings", "changes": {"added", "removed", "modified", "enabled",
// "disabled", "action"} (counts), "diff": [{"gid", "sid", "change", "file", "old_text",
// "new_text"}], "deployment"}
nlohmann::json rules_update_json(const picket::v1::UpdateRulesResponse& response);
std::string rules_update_text(const picket::v1::UpdateRulesResponse& response);

nlohmann::json rule_updates_json(const picket::v1::RuleUpdateHistoryResponse& response);
std::string rule_updates_text(const picket::v1::RuleUpdateHistoryResponse& response);

}  // namespace picket::manager::cli
