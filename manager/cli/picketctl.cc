// picketctl: argument parsing (CLI11) and one function per command.
#include "manager/cli/picketctl.h"

#include <pwd.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <ostream>
#include <thread>

#include "common/bundle/bundle.h"
#include "common/pki/pki.h"
#include "common/strings.h"
#include "manager/cli/command.h"
#include "manager/store/selector.h"

namespace picket::manager::cli {
namespace {

// A bundle or CA name: what verify_bundle / pki accept, checked before any I/O.
bool valid_name(std::string_view name) {
    if (name.empty() || name.size() > 64) {
        return false;
    }
    return std::all_of(name.begin(), name.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               c == '.' || c == '_' || c == '-';
    });
}

std::string local_user() {
    if (const char* u = getenv("USER"); u != nullptr && *u != '\0') {
        return u;
    }
    if (const passwd* pw = getpwuid(getuid()); pw != nullptr) {
        return pw->pw_name;
    }
    return "unknown";
}

int64_t now_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}

// --wait, --timeout and --poll-ms of deploy and rollback.
struct WaitOptions {
    bool wait = false;
    int timeout_s = 300;
    int poll_ms = 500;
};

void add_wait_options(CLI::App* cmd, WaitOptions& w) {
    cmd->add_flag("--wait", w.wait, "Wait until every target applied or failed");
    cmd->add_option("--timeout", w.timeout_s, "Seconds --wait waits (default 300)")
        ->check(CLI::Range(1, 7 * 86400));
    cmd->add_option("--poll-ms", w.poll_ms)->group("")->check(CLI::Range(10, 60000));
}

// Shared by deploy and rollback: prints progress while polling GetDeployment, then the final
// document. Exit 1 when a target was not applied or the wait timed out.
int finish_deployment(Command& cmd, v1::Deployment d, const WaitOptions& w) {
    const bool wait = w.wait;
    const int timeout_s = w.timeout_s;
    const int poll_ms = w.poll_ms;
    if (!wait) {
        if (cmd.json_output()) {
            cmd.print(deployment_json(d));
        } else {
            cmd.print(deployment_text(d));
        }
        return kExitOk;
    }
    if (!cmd.json_output()) {
        cmd.print(deployment_text(d));
        cmd.out() << "\nwaiting for deployment " << d.id() << " (timeout " << timeout_s << " s)\n";
    }
    std::map<std::string, v1::TargetState> seen;
    for (const v1::DeploymentTarget& t : d.targets()) {
        seen[t.sensor()] = t.state();
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
    bool timed_out = false;
    // Each target's change, as it is seen.
    auto update = [&](const v1::Deployment& next) {
        d = next;
        if (!cmd.json_output()) {
            for (const v1::DeploymentTarget& t : d.targets()) {
                auto it = seen.find(t.sensor());
                v1::TargetState before =
                    it == seen.end() ? v1::TARGET_STATE_UNSPECIFIED : it->second;
                if (before != t.state()) {
                    cmd.out() << "  " << t.sensor() << ": " << target_state_name(before) << " -> "
                              << target_state_name(t.state());
                    if (!t.error().empty()) {
                        cmd.out() << " (" << t.error().substr(0, t.error().find('\n')) << ")";
                    }
                    cmd.out() << "\n";
                }
                seen[t.sensor()] = t.state();
            }
        }
    };
    // WatchDeployment streams each change; a manager without it (UNIMPLEMENTED) is polled.
    bool watch = true;
    while (!deployment_final(d)) {
        if (std::chrono::steady_clock::now() >= deadline) {
            timed_out = true;
            break;
        }
        absl::Status st;
        if (watch) {
            st = cmd.watch_deployment(d.id(), deadline, update);
            if (st.code() == absl::StatusCode::kUnimplemented) {
                watch = false;
                continue;
            }
            if (st.ok()) {
                if (!deployment_final(d)) {  // not expected: the stream ends when it is final
                    std::this_thread::sleep_for(std::chrono::milliseconds(poll_ms));
                }
                continue;
            }
        } else {
            std::this_thread::sleep_for(std::chrono::milliseconds(poll_ms));
            v1::GetDeploymentRequest req;
            req.set_id(d.id());
            v1::GetDeploymentResponse resp;
            st = cmd.call(&Stub::GetDeployment, req, &resp);
            if (st.ok()) {
                update(resp.deployment());
                continue;
            }
        }
        if (st.code() == absl::StatusCode::kUnavailable ||
            st.code() == absl::StatusCode::kDeadlineExceeded) {
            // The manager restarting, or our own deadline: keep trying until our timeout.
            std::this_thread::sleep_for(std::chrono::milliseconds(poll_ms));
            continue;
        }
        return cmd.fail(st);
    }
    if (cmd.json_output()) {
        cmd.print(deployment_json(d));
    } else {
        cmd.out() << "\n";
        cmd.print(deployment_text(d));
    }
    if (timed_out) {
        int final_count = 0;
        for (const v1::DeploymentTarget& t : d.targets()) {
            final_count += target_final(t.state()) ? 1 : 0;
        }
        return cmd.fail(absl::DeadlineExceededError(
            "deployment " + d.id() + " not finished after " + std::to_string(timeout_s) + " s (" +
            std::to_string(final_count) + " of " + std::to_string(d.targets_size()) +
            " targets final)"));
    }
    if (!deployment_all_applied(d)) {
        std::string which;
        int bad = 0;
        for (const v1::DeploymentTarget& t : d.targets()) {
            if (t.state() != v1::TARGET_STATE_APPLIED) {
                which += (bad++ == 0 ? "" : ", ") + t.sensor() + " " +
                         std::string(target_state_name(t.state()));
            }
        }
        const char* how =
            d.state() == v1::DEPLOYMENT_STATE_SUPERSEDED ? " superseded by a newer deployment" : "";
        return cmd.fail("deployment " + d.id() + how + ": " + std::to_string(bad) + " of " +
                        std::to_string(d.targets_size()) + " targets not applied (" + which + ")");
    }
    return kExitOk;
}

// `sensor show|revoke NAME`: the name checked locally, then one RPC naming the sensor.
template <typename Req, typename Resp, typename ToJson, typename ToText>
int on_sensor(Command& cmd, const std::string& name,
              grpc::Status (Stub::*method)(grpc::ClientContext*, const Req&, Resp*),
              ToJson&& to_json, ToText&& to_text) {
    if (auto rc = cmd.check_sensor_name(name)) {
        return *rc;
    }
    Req req;
    req.set_name(name);
    return cmd.show(method, req, to_json, to_text);
}

std::optional<int> check_selector(Command& cmd, const std::string& selector) {
    absl::StatusOr<store::Selector> sel = store::Selector::parse(selector);
    if (!sel.ok()) {
        return cmd.usage(sel.status());
    }
    return std::nullopt;
}

}  // namespace

int run(int argc, const char* const argv[], std::ostream& out, std::ostream& err) {
    Globals g;
    CLI::App app{"picketctl: operate a Picket sensor fleet through its manager", "picketctl"};
    app.fallthrough();  // global options may follow the command
    app.add_option("--manager", g.conn.manager, "Manager address HOST:PORT")
        ->envname("PICKETCTL_MANAGER");
    auto* token = app.add_option("--token", g.conn.token, "Admin bearer token");
    auto* token_file = app.add_option("--token-file", g.token_file, "File holding the admin token")
                           ->check(CLI::ExistingFile);
    token->excludes(token_file);
    app.add_option("--ca", g.conn.ca_file, "Fleet CA certificate (PEM)")->check(CLI::ExistingFile);
    auto* cert = app.add_option("--cert", g.conn.cert_file, "Client certificate (PEM)")
                     ->check(CLI::ExistingFile);
    auto* key =
        app.add_option("--key", g.conn.key_file, "Client key (PEM)")->check(CLI::ExistingFile);
    cert->needs(key);
    key->needs(cert);
    app.add_flag("--insecure", g.conn.insecure, "No TLS, no auth (loopback managers only)");
    app.add_flag("--json", g.json, "Print one JSON document");

    // One entry per leaf command; the parsed one runs.
    std::vector<std::pair<CLI::App*, std::function<int()>>> leaves;
    auto leaf = [&](CLI::App* sub, std::function<int()> fn) { leaves.emplace_back(sub, fn); };
    auto positive = CLI::Validator(
        [](std::string& v) -> std::string {
            if (v.empty() || !std::all_of(v.begin(), v.end(), ::isdigit) ||
                v.find_first_not_of('0') == std::string::npos) {
                return "expected a positive integer, got '" + v + "'";
            }
            return {};
        },
        "N>0");

    // ---- sensors
    std::string sensors_selector;
    auto* sensors = app.add_subcommand("sensors", "List sensors");
    sensors->add_option("--selector", sensors_selector,
                        "Only sensors matching all | NAME,NAME | label=KEY=VALUE");
    leaf(sensors, [&] {
        Command cmd("sensors", g, out, err);
        if (!sensors_selector.empty()) {
            if (auto rc = check_selector(cmd, sensors_selector)) {
                return *rc;
            }
        }
        if (auto rc = cmd.connect()) {
            return *rc;
        }
        // Every page (a manager returns at most 1000 sensors per call).
        v1::ListSensorsRequest req;
        req.set_selector(sensors_selector);
        v1::ListSensorsResponse all;
        for (;;) {
            v1::ListSensorsResponse page;
            if (absl::Status st = cmd.call(&Stub::ListSensors, req, &page); !st.ok()) {
                return cmd.fail(st);
            }
            for (v1::Sensor& s : *page.mutable_sensors()) {
                *all.add_sensors() = std::move(s);
            }
            if (page.next_page_token().empty()) {
                break;
            }
            req.set_page_token(page.next_page_token());
        }
        cmd.json_output() ? cmd.print(sensors_json(all)) : cmd.print(sensors_text(all));
        return kExitOk;
    });

    // ---- sensor show NAME
    auto* sensor = app.add_subcommand("sensor", "One sensor");
    sensor->require_subcommand(1);
    std::string sensor_name;
    auto* sensor_show = sensor->add_subcommand("show", "A sensor with its latest counters");
    sensor_show->add_option("NAME", sensor_name, "Sensor name")->required();
    leaf(sensor_show, [&] {
        Command cmd("sensor show", g, out, err);
        return on_sensor(cmd, sensor_name, &Stub::GetSensor, sensor_json, sensor_text);
    });

    // ---- sensor revoke NAME
    std::string revoke_name;
    auto* sensor_revoke = sensor->add_subcommand(
        "revoke", "Cut a sensor off: close its stream, refuse it until re-enrolled");
    sensor_revoke->add_option("NAME", revoke_name, "Sensor name")->required();
    leaf(sensor_revoke, [&] {
        Command cmd("sensor revoke", g, out, err);
        return on_sensor(cmd, revoke_name, &Stub::RevokeSensor, revoke_json, revoke_text);
    });

    // ---- sensor readmit NAME
    std::string readmit_name;
    auto* sensor_readmit =
        sensor->add_subcommand("readmit", "Lift a sensor's revocation so that it may enroll again");
    sensor_readmit->add_option("NAME", readmit_name, "Sensor name")->required();
    leaf(sensor_readmit, [&] {
        Command cmd("sensor readmit", g, out, err);
        return on_sensor(cmd, readmit_name, &Stub::ReadmitSensor, readmit_json, readmit_text);
    });

    add_enroll_commands(app, g, out, err, leaf);

    // ---- bundle push|list|show|diff
    auto* bundle = app.add_subcommand("bundle", "Bundles: push, list, show, diff");
    bundle->require_subcommand(1);

    std::string push_dir;
    std::optional<std::string> push_name;
    std::optional<std::string> push_message;
    auto* push = bundle->add_subcommand("push", "Upload a bundle directory; prints its version");
    push->add_option("DIR", push_dir, "Bundle directory (rules/*.rules, config.yaml, ...)")
        ->required()
        ->check(CLI::ExistingDirectory);
    push->add_option("--name", push_name, "Bundle name (default: manifest or directory name)");
    push->add_option("-m,--message", push_message, "Change description");
    bool push_force = false;
    push->add_flag("--force", push_force,
                   "Store it even when none of its rules loads with the sensor's parser");
    leaf(push, [&] {
        Command cmd("bundle push", g, out, err);
        if (push_name && !valid_name(*push_name)) {
            return cmd.usage("--name '" + *push_name + "': use 1-64 of [A-Za-z0-9._-]");
        }
        absl::StatusOr<bundle::Bundle> b = bundle::load_bundle_dir(push_dir);
        if (!b.ok()) {
            return cmd.fail(b.status());
        }
        v1::Manifest& m = *b->mutable_manifest();
        const bool is_signed = !b->signature().empty();
        if (is_signed && ((push_name && *push_name != m.name()) ||
                          (push_message && *push_message != m.message()))) {
            return cmd.usage("the bundle is signed: --name / -m would invalidate its signature");
        }
        if (!is_signed) {
            if (push_name) {
                m.set_name(*push_name);
            }
            if (push_message) {
                m.set_message(*push_message);
            }
            if (m.author().empty()) {
                m.set_author(local_user());
            }
            if (m.created_at() == 0) {
                m.set_created_at(now_ns());
            }
        }
        // The manager assigns versions; a directory written from a stored bundle carries one.
        m.set_version(0);
        m.set_parent_version(0);
        bundle::VerifyOptions vo;
        vo.require_version = false;
        if (absl::Status st = bundle::verify_bundle(*b, vo); !st.ok()) {
            return cmd.fail(st);
        }
        if (absl::Status st = bundle::check_content(*b); !st.ok()) {
            return cmd.fail(st);
        }
        v1::PushBundleRequest req;
        *req.mutable_bundle() = std::move(*b);
        req.set_force(push_force);
        const v1::Manifest& pushed = req.bundle().manifest();
        return cmd.show(
            &Stub::PushBundle, req, [&](const auto& r) { return push_json(r, pushed); },
            [&](const auto& r) { return push_text(r, pushed); });
    });

    std::string list_name;
    uint32_t list_limit = 0;
    auto* blist = bundle->add_subcommand("list", "Stored bundles, newest first");
    blist->add_option("--name", list_name, "Only bundles with this name");
    blist->add_option("--limit", list_limit, "At most N (default: the manager's, 100)")
        ->check(CLI::Range(1, 100000));
    leaf(blist, [&] {
        Command cmd("bundle list", g, out, err);
        v1::ListBundlesRequest req;
        req.set_name(list_name);
        req.set_limit(list_limit);
        return cmd.show(&Stub::ListBundles, req, bundles_json, bundles_text);
    });

    uint64_t show_version = 0;
    auto* bshow = bundle->add_subcommand("show", "One stored bundle: manifest and files");
    bshow->add_option("V", show_version, "Version")->required()->check(positive);
    leaf(bshow, [&] {
        Command cmd("bundle show", g, out, err);
        v1::GetBundleRequest req;
        req.set_version(show_version);
        return cmd.show(&Stub::GetBundle, req, bundle_json, bundle_text);
    });

    uint64_t diff_from = 0;
    uint64_t diff_to = 0;
    auto* bdiff = bundle->add_subcommand("diff", "Rules and config changed from V1 to V2");
    bdiff->add_option("V1", diff_from, "From version")->required()->check(positive);
    bdiff->add_option("V2", diff_to, "To version")->required()->check(positive);
    leaf(bdiff, [&] {
        Command cmd("bundle diff", g, out, err);
        v1::DiffBundlesRequest req;
        req.set_from_version(diff_from);
        req.set_to_version(diff_to);
        return cmd.show(
            &Stub::DiffBundles, req, [](const auto& r) { return diff_json(r.diff()); },
            [](const auto& r) { return diff_text(r.diff()); });
    });

    // ---- deploy V --to SELECTOR
    uint64_t deploy_version = 0;
    std::string deploy_to;
    uint32_t canary = 0;
    uint32_t soak = 0;
    double max_drop_ratio = 0;
    double max_alert_rate = 0;
    WaitOptions deploy_wait;
    auto* deploy = app.add_subcommand("deploy", "Deploy a stored version to sensors");
    deploy->add_option("V", deploy_version, "Version")->required()->check(positive);
    deploy->add_option("--to", deploy_to, "all | NAME,NAME | label=KEY=VALUE")->required();
    auto* canary_opt = deploy->add_option("--canary", canary, "Percent of targets first (1-99)")
                           ->check(CLI::Range(1, 99));
    deploy->add_option("--soak", soak, "Seconds the canaries must stay healthy (at most a day)")
        ->check(CLI::Range(0, 86400))
        ->needs(canary_opt);
    deploy
        ->add_option("--max-drop-ratio", max_drop_ratio,
                     "Health gate: drops/packets during the soak (default: manager's)")
        ->check(CLI::Range(0.0, 1.0))
        ->needs(canary_opt);
    deploy
        ->add_option("--max-alert-rate", max_alert_rate,
                     "Health gate: alerts per second per sensor (default: manager's)")
        ->check(CLI::NonNegativeNumber)
        ->needs(canary_opt);
    add_wait_options(deploy, deploy_wait);
    leaf(deploy, [&] {
        Command cmd("deploy", g, out, err);
        if (auto rc = check_selector(cmd, deploy_to)) {
            return *rc;
        }
        v1::DeployRequest req;
        req.set_version(deploy_version);
        req.set_selector(deploy_to);
        req.set_canary_percent(canary);
        req.set_soak_seconds(soak);
        req.mutable_gate()->set_max_drop_ratio(max_drop_ratio);
        req.mutable_gate()->set_max_alerts_per_second(max_alert_rate);
        return cmd.exchange(&Stub::Deploy, req, [&](const v1::DeployResponse& r) {
            return finish_deployment(cmd, r.deployment(), deploy_wait);
        });
    });

    // ---- rollback --to SELECTOR [--version V]
    std::string rollback_to;
    std::optional<uint64_t> rollback_version;
    WaitOptions rollback_wait;
    auto* rollback = app.add_subcommand(
        "rollback", "Deploy earlier versions (default: each sensor's previous one)");
    rollback->add_option("--to", rollback_to, "all | NAME,NAME | label=KEY=VALUE")->required();
    rollback->add_option("--version", rollback_version, "Version to go to")->check(positive);
    add_wait_options(rollback, rollback_wait);
    leaf(rollback, [&] {
        Command cmd("rollback", g, out, err);
        if (auto rc = check_selector(cmd, rollback_to)) {
            return *rc;
        }
        v1::RollbackRequest req;
        req.set_selector(rollback_to);
        if (rollback_version) {
            req.set_version(*rollback_version);
        }
        return cmd.exchange(&Stub::Rollback, req, [&](const v1::RollbackResponse& r) {
            return finish_deployment(cmd, r.deployment(), rollback_wait);
        });
    });

    // ---- history [--sensor NAME]
    std::string history_sensor;
    uint32_t history_limit = 0;
    auto* history = app.add_subcommand("history", "Run periods and deployments, newest first");
    history->add_option("--sensor", history_sensor, "Only this sensor");
    history->add_option("--limit", history_limit, "At most N of each (default: manager's, 100)")
        ->check(CLI::Range(1, 100000));
    bool history_targets = false;
    history->add_flag("--targets", history_targets,
                      "With --json and no --sensor: every deployment's targets, not only their "
                      "counts (large on a big fleet; `deployment ID` shows one)");
    leaf(history, [&] {
        Command cmd("history", g, out, err);
        if (auto rc = cmd.check_sensor_name(history_sensor, /*optional=*/true)) {
            return *rc;
        }
        v1::HistoryRequest req;
        req.set_sensor(history_sensor);
        req.set_limit(history_limit);
        req.set_counts_only(history_sensor.empty() && !history_targets);
        return cmd.show(&Stub::History, req, history_json, history_text);
    });

    // ---- alerts [--sensor NAME] [--sid N] [--limit N]
    std::string alerts_sensor;
    uint32_t alerts_sid = 0;
    uint32_t alerts_limit = 0;
    auto* alerts =
        app.add_subcommand("alerts", "Recent alerts the manager holds in memory, newest first");
    alerts->add_option("--sensor", alerts_sensor, "Only this sensor");
    alerts->add_option("--sid", alerts_sid, "Only this rule sid")->check(positive);
    // The manager's ring holds at most 1,000,000 alerts (--alert-ring-size).
    alerts->add_option("--limit", alerts_limit, "At most N (default: manager's, 20)")
        ->check(CLI::Range(1, 1000000));
    leaf(alerts, [&] {
        Command cmd("alerts", g, out, err);
        if (auto rc = cmd.check_sensor_name(alerts_sensor, /*optional=*/true)) {
            return *rc;
        }
        v1::ListAlertsRequest req;
        req.set_sensor(alerts_sensor);
        req.set_sid(alerts_sid);
        req.set_limit(alerts_limit);
        return cmd.show(&Stub::ListAlerts, req, alerts_json, alerts_text);
    });

    // ---- deployment show ID
    auto* deployment = app.add_subcommand("deployment", "One deployment");
    deployment->require_subcommand(1);
    std::string deployment_id;
    auto* dshow = deployment->add_subcommand("show", "A deployment with every target's state");
    dshow->add_option("ID", deployment_id, "Deployment id")->required()->check(positive);
    leaf(dshow, [&] {
        Command cmd("deployment show", g, out, err);
        v1::GetDeploymentRequest req;
        req.set_id(deployment_id);
        return cmd.show(
            &Stub::GetDeployment, req,
            [](const auto& r) { return deployment_json(r.deployment()); },
            [](const auto& r) { return deployment_text(r.deployment()); });
    });

    // ---- rules source|policy|update|history
    auto* rules_cmd = app.add_subcommand("rules", "Rule sources, policy files and updates");
    rules_cmd->require_subcommand(1);
    auto* source_cmd = rules_cmd->add_subcommand("source", "Upstream rulesets the manager fetches");
    source_cmd->require_subcommand(1);
    std::string src_name;
    std::string src_location;
    std::vector<std::string> src_headers;
    std::string src_checksum;
    auto* sadd = source_cmd->add_subcommand("add", "Add a source: URL (http/https) or PATH");
    sadd->add_option("NAME", src_name, "Source name ([A-Za-z0-9._-], also rules/NAME/)")
        ->required();
    sadd->add_option("LOCATION", src_location, "URL of a tar.gz/zip/.rules, or an absolute path")
        ->required();
    sadd->add_option("--header", src_headers, "HTTP request header 'Name: value', repeatable");
    sadd->add_option("--checksum-url", src_checksum, "URL of the archive's MD5/SHA-256 hex");
    leaf(sadd, [&] {
        Command cmd("rules source add", g, out, err);
        v1::AddRuleSourceRequest req;
        v1::RuleSource* s = req.mutable_source();
        s->set_name(src_name);
        s->set_location(src_location);
        for (const auto& h : src_headers) {
            s->add_headers(h);
        }
        s->set_checksum_url(src_checksum);
        return cmd.show(
            &Stub::AddRuleSource, req, [](const auto& r) { return rule_source_json(r.source()); },
            [](const auto& r) {
                return "added rule source " + r.source().name() + " (" + r.source().location() +
                       ")\n";
            });
    });
    auto* slist = source_cmd->add_subcommand("list", "Sources with their last fetch");
    leaf(slist, [&] {
        Command cmd("rules source list", g, out, err);
        return cmd.show(&Stub::ListRuleSources, v1::ListRuleSourcesRequest{}, rule_sources_json,
                        rule_sources_text);
    });
    std::string src_target;
    auto* sremove = source_cmd->add_subcommand("remove", "Forget a source");
    sremove->add_option("NAME", src_target, "Source name")->required();
    leaf(sremove, [&] {
        Command cmd("rules source remove", g, out, err);
        v1::RemoveRuleSourceRequest req;
        req.set_name(src_target);
        return cmd.show(
            &Stub::RemoveRuleSource, req,
            [&](const auto&) {
                return json{{"removed", src_target}};
            },
            [&](const auto&) { return "removed rule source " + src_target + "\n"; });
    });
    for (bool enable : {true, false}) {
        auto* sub = source_cmd->add_subcommand(
            enable ? "enable" : "disable",
            enable ? "Use the source in updates again" : "Leave the source out of updates");
        sub->add_option("NAME", src_target, "Source name")->required();
        leaf(sub, [&, enable] {
            Command cmd(enable ? "rules source enable" : "rules source disable", g, out, err);
            v1::SetRuleSourceEnabledRequest req;
            req.set_name(src_target);
            req.set_enabled(enable);
            return cmd.show(
                &Stub::SetRuleSourceEnabled, req,
                [](const auto& r) { return rule_source_json(r.source()); },
                [enable](const auto& r) {
                    return std::string(enable ? "enabled" : "disabled") + " rule source " +
                           r.source().name() + "\n";
                });
        });
    }

    auto* policy_cmd = rules_cmd->add_subcommand("policy", "The update's policy files");
    policy_cmd->require_subcommand(1);
    std::vector<std::string> policy_files;
    auto* pput = policy_cmd->add_subcommand(
        "put", "Store policy files: enable.conf disable.conf drop.conf modify.conf tuning.yaml");
    pput->add_option("FILE", policy_files, "Files; the name says which")->required();
    leaf(pput, [&] {
        Command cmd("rules policy put", g, out, err);
        v1::PutRulePolicyRequest req;
        for (const auto& path : policy_files) {
            std::ifstream in(path, std::ios::binary);
            if (!in) {
                return cmd.usage(path + ": cannot read");
            }
            std::string content((std::istreambuf_iterator<char>(in)),
                                std::istreambuf_iterator<char>());
            v1::RulePolicyFile* f = req.add_files();
            f->set_name(std::filesystem::path(path).filename().string());
            f->set_content(std::move(content));
        }
        return cmd.show(
            &Stub::PutRulePolicy, req,
            [&](const auto&) {
                json names = json::array();
                for (const auto& f : req.files()) {
                    names.push_back(f.name());
                }
                return json{{"stored", names}};
            },
            [&](const auto&) {
                std::string names;
                for (const auto& f : req.files()) {
                    names += (names.empty() ? "" : ", ") + f.name();
                }
                return "stored " + names + "\n";
            });
    });
    auto* pshow = policy_cmd->add_subcommand("show", "The stored policy files");
    leaf(pshow, [&] {
        Command cmd("rules policy show", g, out, err);
        return cmd.show(&Stub::GetRulePolicy, v1::GetRulePolicyRequest{}, rule_policy_json,
                        rule_policy_text);
    });
    std::string policy_name;
    auto* premove = policy_cmd->add_subcommand("remove", "Remove one policy file");
    premove->add_option("NAME", policy_name, "enable.conf, disable.conf, ...")->required();
    leaf(premove, [&] {
        Command cmd("rules policy remove", g, out, err);
        v1::RemoveRulePolicyRequest req;
        req.set_name(policy_name);
        return cmd.show(
            &Stub::RemoveRulePolicy, req,
            [&](const auto&) {
                return json{{"removed", policy_name}};
            },
            [&](const auto&) { return "removed " + policy_name + "\n"; });
    });

    std::vector<std::string> update_sources;
    bool update_deploy = false;
    std::string update_to;
    uint32_t update_canary = 0;
    uint32_t update_soak = 0;
    int update_timeout = 600;
    WaitOptions update_wait;
    auto* update = rules_cmd->add_subcommand(
        "update", "Fetch, apply the policy, store a new version when something changed");
    update->add_option("--source", update_sources, "Fetch only this source (repeatable)");
    auto* deploy_flag = update->add_flag("--deploy", update_deploy, "Deploy the new version");
    update->add_option("--to", update_to, "With --deploy: all | NAME,NAME | label=KEY=VALUE")
        ->needs(deploy_flag);
    auto* ucanary = update->add_option("--canary", update_canary, "Percent of targets first")
                        ->check(CLI::Range(1, 99))
                        ->needs(deploy_flag);
    update->add_option("--soak", update_soak, "Seconds the canaries must stay healthy")
        ->check(CLI::Range(0, 86400))
        ->needs(ucanary);
    update->add_option("--rpc-timeout", update_timeout, "Seconds the update may take (600)")
        ->check(CLI::Range(1, 86400));
    add_wait_options(update, update_wait);
    leaf(update, [&] {
        Command cmd("rules update", g, out, err);
        if (update_deploy && update_to.empty()) {
            return cmd.usage("--deploy needs --to SELECTOR");
        }
        if (update_deploy) {
            if (auto rc = check_selector(cmd, update_to)) {
                return *rc;
            }
        }
        cmd.set_rpc_timeout(std::chrono::seconds(update_timeout));
        v1::UpdateRulesRequest req;
        for (const auto& s : update_sources) {
            req.add_sources(s);
        }
        if (update_deploy) {
            req.mutable_deploy()->set_selector(update_to);
            req.mutable_deploy()->set_canary_percent(update_canary);
            req.mutable_deploy()->set_soak_seconds(update_soak);
        }
        req.set_author("picketctl");
        return cmd.exchange(&Stub::UpdateRules, req, [&](const v1::UpdateRulesResponse& r) {
            if (r.has_deployment() && update_wait.wait) {
                if (!cmd.json_output()) {
                    v1::UpdateRulesResponse head = r;
                    head.clear_deployment();
                    cmd.print(rules_update_text(head));
                }
                return finish_deployment(cmd, r.deployment(), update_wait);
            }
            cmd.json_output() ? cmd.print(rules_update_json(r)) : cmd.print(rules_update_text(r));
            return kExitOk;
        });
    });
    uint32_t rhist_limit = 0;
    auto* rhist = rules_cmd->add_subcommand("history", "Past rules updates, newest first");
    rhist->add_option("--limit", rhist_limit, "At most N (default 50)")
        ->check(CLI::Range(1, 10000));
    leaf(rhist, [&] {
        Command cmd("rules history", g, out, err);
        v1::RuleUpdateHistoryRequest req;
        req.set_limit(rhist_limit);
        return cmd.show(&Stub::RuleUpdateHistory, req, rule_updates_json, rule_updates_text);
    });

    // ---- pki init|issue (local, no manager)
    auto* pki_cmd = app.add_subcommand("pki", "Fleet CA and certificates (local files)");
    pki_cmd->require_subcommand(1);
    std::string pki_dir;
    std::string ca_cn = "Picket fleet CA";
    auto* pinit = pki_cmd->add_subcommand("init", "Create DIR/ca.crt and DIR/ca.key");
    pinit->add_option("DIR", pki_dir, "PKI directory (created 0700)")->required();
    pinit->add_option("--cn", ca_cn, "CA common name");
    leaf(pinit, [&] {
        Command cmd("pki init", g, out, err);
        if (ca_cn.empty() || ca_cn.size() > 64) {
            return cmd.usage("--cn: 1-64 characters");
        }
        absl::StatusOr<pki::IssuedFiles> files = pki::init_ca(pki_dir, ca_cn);
        if (!files.ok()) {
            return cmd.fail(files.status());
        }
        if (cmd.json_output()) {
            cmd.print(json{{"cert", files->cert.string()}, {"key", files->key.string()}});
        } else {
            cmd.print("created CA '" + ca_cn + "': " + files->cert.string() + ", " +
                      files->key.string() + "\n");
        }
        return kExitOk;
    });

    std::string issue_dir;
    std::string issue_kind;
    std::string issue_name;
    std::vector<std::string> issue_sans;
    auto* pissue = pki_cmd->add_subcommand("issue", "Issue DIR/NAME.crt and DIR/NAME.key");
    pissue->add_option("DIR", issue_dir, "PKI directory holding ca.crt and ca.key")
        ->required()
        ->check(CLI::ExistingDirectory);
    pissue->add_option("--kind", issue_kind, "manager | sensor | admin")
        ->required()
        ->check(CLI::IsMember({"manager", "sensor", "admin"}));
    pissue->add_option("--name", issue_name, "Certificate name (CN, file name)")->required();
    pissue->add_option("--san", issue_sans, "Extra subjectAltName (DNS name or IP), repeatable");
    leaf(pissue, [&] {
        Command cmd("pki issue", g, out, err);
        if (absl::Status st = pki::validate_name(issue_name); !st.ok()) {
            return cmd.usage(st);
        }
        pki::CertKind kind = issue_kind == "manager"  ? pki::CertKind::kManager
                             : issue_kind == "sensor" ? pki::CertKind::kSensor
                                                      : pki::CertKind::kAdmin;
        absl::StatusOr<pki::IssuedFiles> files =
            pki::issue(issue_dir, kind, issue_name, issue_sans);
        if (!files.ok()) {
            return cmd.fail(files.status());
        }
        if (cmd.json_output()) {
            cmd.print(json{{"cert", files->cert.string()},
                           {"key", files->key.string()},
                           {"kind", issue_kind},
                           {"name", issue_name}});
        } else {
            cmd.print("issued " + issue_kind + " certificate '" + issue_name +
                      "': " + files->cert.string() + ", " + files->key.string() + "\n");
        }
        return kExitOk;
    });

    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        if (e.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success)) {
            return app.exit(e, out, err);  // --help
        }
        err << "picketctl: " << e.what() << "\nRun 'picketctl --help' for usage.\n";
        return kExitUsage;
    }
    try {
        for (auto& [sub, fn] : leaves) {
            if (sub->parsed()) {
                return fn();
            }
        }
    } catch (const std::exception& e) {
        err << "picketctl: " << e.what() << "\n";
        return kExitFailed;
    }
    err << "picketctl: no command given\nRun 'picketctl --help' for usage.\n";
    return kExitUsage;
}

}  // namespace picket::manager::cli
