// FleetAdmin: the operator's RPCs. Each handler runs through serve(): authorize, then a body
// that validates, calls the store and converts to protos; its absl::Status goes straight onto
// the wire.
#include <algorithm>
#include <charconv>
#include <chrono>
#include <climits>
#include <cmath>
#include <thread>

#include "absl/strings/str_cat.h"
#include "common/bundle/bundle.h"
#include "common/log.h"
#include "common/pki/pki.h"
#include "common/time_util.h"
#include "manager/rules/rules.h"
#include "manager/service/internal.h"
#include "manager/service/paging.h"
#include "manager/status.h"

namespace picket::manager::service {
namespace {

namespace pb = picket::v1;

constexpr uint32_t kDefaultLimit = 100;
// Problems a refused push lists (the rest is what `picket-sensor -T` prints).
constexpr size_t kPushProblemsListed = 10;
// A canary soak longer than a day is a typo, not a plan.
constexpr uint32_t kMaxSoakSeconds = 86400;
// ListAlerts answers a terminal glance ("what fired just now"), not an export: a short page.
constexpr uint32_t kDefaultAlertLimit = 20;

pb::TargetState target_state(store::TargetState s) {
    switch (s) {
        case store::TargetState::kPending:
            return pb::TARGET_STATE_PENDING;
        case store::TargetState::kSent:
            return pb::TARGET_STATE_SENT;
        case store::TargetState::kApplied:
            return pb::TARGET_STATE_APPLIED;
        case store::TargetState::kRejected:
            return pb::TARGET_STATE_REJECTED;
        case store::TargetState::kTimedOut:
            return pb::TARGET_STATE_TIMED_OUT;
        case store::TargetState::kSuperseded:
            return pb::TARGET_STATE_CANCELLED;
    }
    return pb::TARGET_STATE_UNSPECIFIED;
}

void set_counts(const store::TargetCounts& n, pb::TargetCounts* p) {
    p->set_total(static_cast<uint32_t>(n.total()));
    p->set_pending(static_cast<uint32_t>(n.pending));
    p->set_sent(static_cast<uint32_t>(n.sent));
    p->set_applied(static_cast<uint32_t>(n.applied));
    p->set_rejected(static_cast<uint32_t>(n.rejected));
    p->set_timed_out(static_cast<uint32_t>(n.timed_out));
    p->set_cancelled(static_cast<uint32_t>(n.superseded));
}

pb::DeploymentState deployment_state(store::DeploymentState s) {
    switch (s) {
        case store::DeploymentState::kCanary:
        case store::DeploymentState::kRolling:
            return pb::DEPLOYMENT_STATE_IN_PROGRESS;
        case store::DeploymentState::kSoaking:
            return pb::DEPLOYMENT_STATE_SOAKING;
        case store::DeploymentState::kCompleted:
            return pb::DEPLOYMENT_STATE_SUCCEEDED;
        case store::DeploymentState::kFailed:
            return pb::DEPLOYMENT_STATE_FAILED;
        case store::DeploymentState::kRolledBack:
            return pb::DEPLOYMENT_STATE_ROLLED_BACK;
        case store::DeploymentState::kSuperseded:
            return pb::DEPLOYMENT_STATE_SUPERSEDED;
    }
    return pb::DEPLOYMENT_STATE_UNSPECIFIED;
}

absl::StatusOr<int64_t> parse_id(const std::string& s) {
    int64_t id = 0;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), id);
    if (s.empty() || ec != std::errc() || end != s.data() + s.size() || id <= 0) {
        return absl::InvalidArgumentError("deployment id '" + s + "' is not a positive number");
    }
    return id;
}

absl::Status require_version(store::Store& st, uint64_t version) {
    if (version == 0) {
        return absl::InvalidArgumentError("a bundle version is required");
    }
    if (version > static_cast<uint64_t>(INT64_MAX)) {
        return absl::NotFoundError("bundle version " + std::to_string(version) + " not found");
    }
    auto b = st.get_bundle(static_cast<int64_t>(version), false);
    if (!b.ok() && absl::IsNotFound(b.status())) {
        return absl::NotFoundError("bundle version " + std::to_string(version) + " not found");
    }
    return b.status();
}

}  // namespace

absl::Status FleetAdminService::authorize(grpc::ServerContext* ctx) const {
    if (core_.options.insecure) {
        return absl::OkStatus();  // loopback only (validate_options)
    }
    if (core_.options.admin_token.empty()) {
        return absl::PermissionDeniedError("admin RPCs are disabled: no admin token configured");
    }
    const auto& md = ctx->client_metadata();
    auto it = md.find("authorization");
    if (it == md.end()) {
        return absl::UnauthenticatedError("missing 'authorization: Bearer <token>' metadata");
    }
    std::string_view value(it->second.data(), it->second.size());
    constexpr std::string_view kBearer = "Bearer ";
    if (value.substr(0, kBearer.size()) != kBearer) {
        return absl::UnauthenticatedError("authorization metadata is not 'Bearer <token>'");
    }
    value.remove_prefix(kBearer.size());
    // Compare fixed-length hashes so the time depends on nothing about either token.
    if (!pki::constant_time_equal(pki::token_hash(value),
                                  pki::token_hash(core_.options.admin_token))) {
        return absl::UnauthenticatedError("bad admin token");
    }
    return absl::OkStatus();
}

absl::StatusOr<std::vector<store::Sensor>> FleetAdminService::resolve(const std::string& selector) {
    auto sel = store::Selector::parse(selector);
    if (!sel.ok()) {
        return sel.status();
    }
    auto all = core_.store.list_sensors();
    if (!all.ok()) {
        return all.status();
    }
    if (sel->kind() == store::Selector::Kind::kNames) {
        for (const std::string& n : sel->names()) {
            bool known = std::any_of(all->begin(), all->end(),
                                     [&](const store::Sensor& s) { return s.name == n; });
            if (!known) {
                return absl::NotFoundError("unknown sensor '" + n + "'");
            }
        }
    }
    std::vector<store::Sensor> out;
    for (store::Sensor& s : *all) {
        if (sel->matches(s.name, s.labels)) {
            out.push_back(std::move(s));
        }
    }
    if (out.empty()) {
        return absl::FailedPreconditionError("selector '" + selector + "' matches no sensor");
    }
    return out;
}

absl::StatusOr<pb::Deployment> FleetAdminService::to_proto(const store::Deployment& d) {
    pb::Deployment p;
    p.set_id(std::to_string(d.id));
    if (d.kind == store::DeploymentKind::kDeploy) {
        p.set_kind(pb::DEPLOYMENT_KIND_DEPLOY);
    } else {
        p.set_kind(d.parent_id != 0 && d.actor == "rollout" ? pb::DEPLOYMENT_KIND_AUTO_ROLLBACK
                                                            : pb::DEPLOYMENT_KIND_ROLLBACK);
    }
    if (d.parent_id != 0) {
        p.set_rolls_back_deployment_id(std::to_string(d.parent_id));
    }
    p.set_version(static_cast<uint64_t>(d.bundle_version));
    p.set_selector(d.selector);
    p.set_canary_percent(static_cast<uint32_t>(d.canary_percent));
    p.set_soak_seconds(static_cast<uint32_t>(d.soak_seconds));
    rollout::HealthGate g = core_.rollout->gate(d);
    p.mutable_gate()->set_max_drop_ratio(g.max_drop_ratio);
    p.mutable_gate()->set_max_alerts_per_second(g.max_alerts_per_second);
    p.set_state(deployment_state(d.state));
    p.set_message(d.error);
    p.set_created_at(d.created_at);
    p.set_finished_at(store::is_terminal(d.state) ? d.updated_at : 0);
    if (d.state == store::DeploymentState::kRolledBack) {
        auto recent = core_.store.list_deployments(1000, false);
        if (recent.ok()) {
            for (const store::Deployment& r : *recent) {
                if (r.parent_id == d.id) {
                    p.set_rollback_deployment_id(std::to_string(r.id));
                }
            }
        }
    }
    set_counts(d.counts, p.mutable_target_counts());
    // previous_version: the bundle of the run open when the deployment was created (one query
    // for all targets; only the one sensor's when the targets were narrowed to it).
    std::map<std::string, int64_t> previous;
    if (!d.targets.empty()) {
        ASSIGN_OR_RETURN(
            previous, core_.store.previous_versions(
                          d.id, d.targets.size() == 1 && d.counts.total() > 1 ? d.targets[0].sensor
                                                                              : std::string()));
    }
    for (const store::Target& t : d.targets) {
        pb::DeploymentTarget* pt = p.add_targets();
        pt->set_sensor(t.sensor);
        pt->set_state(target_state(t.state));
        pt->set_version(static_cast<uint64_t>(t.bundle_version));
        pt->set_error(t.error);
        pt->set_canary(t.stage == store::Stage::kCanary);
        pt->set_created_at(t.created_at);
        pt->set_sent_at(t.sent_at);
        pt->set_finished_at(t.finished_at);
        if (auto it = previous.find(t.sensor); it != previous.end()) {
            pt->set_previous_version(static_cast<uint64_t>(it->second));
        }
        if (auto st = core_.live.apply_stats(d.id, t.sensor)) {
            pt->set_rules_loaded(st->rules_loaded);
            pt->set_rules_skipped(st->rules_skipped);
            pt->set_compile_ms(st->compile_ms);
        }
    }
    return p;
}

namespace {

pb::Sensor sensor_proto(const store::Sensor& s, Core& core) {
    pb::Sensor p;
    p.set_name(s.name);
    p.set_host(s.host);
    p.set_version(s.version);
    pb::CaptureMode mode = pb::CAPTURE_MODE_UNSPECIFIED;
    pb::CaptureMode_Parse(s.capture_mode, &mode);
    p.set_capture_mode(mode);
    p.set_workers(static_cast<uint32_t>(std::max(0, s.workers)));
    p.mutable_labels()->insert(s.labels.begin(), s.labels.end());
    p.set_connected(s.connected);
    p.set_first_seen(s.first_seen);
    p.set_last_seen(s.last_seen);
    p.set_revoked(s.revoked);
    p.set_revoked_at(s.revoked_at);
    *p.mutable_bundle() = core.bundles.ref(s.running_version);
    if (auto live = core.live.sensor(s.name)) {
        p.set_peer(live->peer);
        p.set_capture_source(live->capture_source);
        p.set_ips_mode(live->ips_mode);
    }
    return p;
}

}  // namespace

grpc::Status FleetAdminService::ListSensors(grpc::ServerContext* ctx,
                                            const pb::ListSensorsRequest* req,
                                            pb::ListSensorsResponse* resp) {
    return serve(ctx, [&]() -> absl::Status {
        // Sorted by name; the token is "n:" + the previous page's last name (paging.h).
        ASSIGN_OR_RETURN(PageRequest page,
                         page_request(req->page_size(), kMaxPageSize, req->page_token(), "n",
                                      [](std::string_view n) {
                                          return store::validate_sensor_name(std::string(n)).ok();
                                      }));
        ASSIGN_OR_RETURN(std::vector<store::Sensor> sensors,
                         core_.store.list_sensors(req->selector()));
        std::sort(sensors.begin(), sensors.end(),
                  [](const store::Sensor& a, const store::Sensor& b) { return a.name < b.name; });
        resp->set_next_page_token(forward_page(
            sensors, page, "n", [](const store::Sensor& s) -> const std::string& { return s.name; },
            [&](const store::Sensor& s) { *resp->add_sensors() = sensor_proto(s, core_); }));
        return absl::OkStatus();
    });
}

grpc::Status FleetAdminService::GetSensor(grpc::ServerContext* ctx, const pb::GetSensorRequest* req,
                                          pb::GetSensorResponse* resp) {
    return serve(ctx, [&]() -> absl::Status {
        ASSIGN_OR_RETURN(store::Sensor s, core_.store.get_sensor(req->name()));
        *resp->mutable_sensor() = sensor_proto(s, core_);
        if (auto live = core_.live.sensor(req->name())) {
            resp->mutable_counters()->insert(live->latest.counters.begin(),
                                             live->latest.counters.end());
            resp->set_counters_timestamp(live->latest.timestamp);
            for (const pb::WorkerMetrics& w : live->workers) {
                *resp->add_workers() = w;
            }
        }
        return absl::OkStatus();
    });
}

absl::StatusOr<store::PushResult> FleetAdminService::store_bundle(const pb::Bundle& b) {
    store::NewBundle nb;
    nb.name = b.manifest().name();
    nb.author = b.manifest().author();
    nb.message = b.manifest().message();
    nb.created_at = wall_clock_ns();  // when the manager stored it (pushed_at)
    ASSIGN_OR_RETURN(std::vector<store::BundleInfo> existing, core_.store.list_bundles());
    for (const store::BundleInfo& i : existing) {
        if (i.name == nb.name) {
            nb.parent_version = std::max(nb.parent_version, i.version);
        }
    }
    nb.blob = bundle_blob(b);
    return core_.store.push_bundle(nb);
}

grpc::Status FleetAdminService::PushBundle(grpc::ServerContext* ctx,
                                           const pb::PushBundleRequest* req,
                                           pb::PushBundleResponse* resp) {
    return serve(ctx, [&]() -> absl::Status {
        const pb::Bundle& b = req->bundle();
        if (b.manifest().version() != 0 || b.manifest().parent_version() != 0) {
            return absl::InvalidArgumentError(
                "manifest version and parent_version must be 0: the manager assigns them");
        }
        bundle::VerifyOptions vo;
        vo.require_version = false;
        absl::Status st = bundle::verify_bundle(b, vo);
        if (st.ok()) {
            st = bundle::check_content(b);
        }
        if (!st.ok()) {
            // A hash or size mismatch is a corrupt or truncated upload: the request is invalid.
            absl::StatusCode code =
                absl::IsDataLoss(st) ? absl::StatusCode::kInvalidArgument : st.code();
            return absl::Status(code, "bundle '" + b.manifest().name() +
                                          "' rejected: " + std::string(st.message()));
        }
        // The sensors' own parser: a bundle none of whose enabled rules loads would leave every
        // sensor it reaches without detection.
        auto rules_check = rules::check_rules(b, kPushProblemsListed);
        if (!rules_check.ok()) {
            return absl::InvalidArgumentError("bundle '" + b.manifest().name() + "' rejected: " +
                                              std::string(rules_check.status().message()));
        }
        if (rules_check->enabled > 0 && rules_check->loaded == 0 && !req->force()) {
            std::string msg = "bundle '" + b.manifest().name() + "' rejected: none of its " +
                              std::to_string(rules_check->enabled) +
                              " enabled rules loads with the sensor's parser (push --force "
                              "stores it anyway):";
            for (const std::string& p : rules_check->problems) {
                msg += "\n" + p;
            }
            return absl::InvalidArgumentError(msg);
        }
        ASSIGN_OR_RETURN(store::PushResult pushed, store_bundle(b));
        resp->set_version(static_cast<uint64_t>(pushed.version));
        resp->set_sha256(bundle::bundle_sha256(b));
        log::info("bundle '" + b.manifest().name() + "' " +
                  (pushed.created ? "stored as version " : "already stored as version ") +
                  std::to_string(pushed.version));
        return absl::OkStatus();
    });
}

grpc::Status FleetAdminService::ListBundles(grpc::ServerContext* ctx,
                                            const pb::ListBundlesRequest* req,
                                            pb::ListBundlesResponse* resp) {
    return serve(ctx, [&]() -> absl::Status {
        ASSIGN_OR_RETURN(std::vector<store::BundleInfo> infos, core_.store.list_bundles());
        std::sort(infos.begin(), infos.end(),
                  [](const store::BundleInfo& a, const store::BundleInfo& b) {
                      return a.version > b.version;
                  });
        // Newest first; the token is "v:" + the previous page's last (oldest) version.
        ASSIGN_OR_RETURN(PageRequest page,
                         page_request(req->page_size() != 0 ? req->page_size() : req->limit(),
                                      kDefaultLimit, req->page_token(), "v", is_decimal_key));
        const uint64_t before = page.after.empty() ? UINT64_MAX : decimal_key(page.after);
        for (const store::BundleInfo& i : infos) {
            if ((!req->name().empty() && i.name != req->name()) ||
                static_cast<uint64_t>(i.version) >= before) {
                continue;
            }
            if (static_cast<uint32_t>(resp->bundles_size()) >= page.size) {
                resp->set_next_page_token(page_token(
                    "v",
                    std::to_string(resp->bundles(resp->bundles_size() - 1).manifest().version())));
                break;
            }
            ASSIGN_OR_RETURN(*resp->add_bundles(), core_.bundles.summary(i.version));
        }
        return absl::OkStatus();
    });
}

absl::StatusOr<pb::Bundle> FleetAdminService::load_bundle(uint64_t version,
                                                          store::BundleInfo* info) {
    if (version > static_cast<uint64_t>(INT64_MAX)) {
        // Not "version -1": the number as the client sent it.
        return absl::NotFoundError("bundle version " + std::to_string(version) + " not found");
    }
    ASSIGN_OR_RETURN(store::Bundle stored,
                     core_.store.get_bundle(static_cast<int64_t>(version), true));
    ASSIGN_OR_RETURN(pb::Bundle b, bundle_from_blob(stored.blob));
    *info = std::move(stored.info);
    return b;
}

grpc::Status FleetAdminService::GetBundle(grpc::ServerContext* ctx, const pb::GetBundleRequest* req,
                                          pb::GetBundleResponse* resp) {
    return serve(ctx, [&]() -> absl::Status {
        store::BundleInfo info;
        ASSIGN_OR_RETURN(pb::Bundle b, load_bundle(req->version(), &info));
        *resp->mutable_summary() = summarize(b, info);
        b.mutable_manifest()->set_version(static_cast<uint64_t>(info.version));
        b.mutable_manifest()->set_parent_version(static_cast<uint64_t>(info.parent_version));
        if (!req->include_content()) {
            b.clear_files();
        }
        *resp->mutable_bundle() = std::move(b);
        return absl::OkStatus();
    });
}

grpc::Status FleetAdminService::DiffBundles(grpc::ServerContext* ctx,
                                            const pb::DiffBundlesRequest* req,
                                            pb::DiffBundlesResponse* resp) {
    return serve(ctx, [&]() -> absl::Status {
        pb::Bundle side[2];
        uint64_t versions[2] = {req->from_version(), req->to_version()};
        for (int i = 0; i < 2; ++i) {
            store::BundleInfo info;
            ASSIGN_OR_RETURN(side[i], load_bundle(versions[i], &info));
            side[i].mutable_manifest()->set_version(versions[i]);
        }
        ASSIGN_OR_RETURN(*resp->mutable_diff(), bundle::diff_bundles(side[0], side[1]));
        return absl::OkStatus();
    });
}

absl::StatusOr<pb::Deployment> FleetAdminService::start_deployment(const std::string& selector,
                                                                   std::optional<uint64_t> version,
                                                                   store::NewDeployment nd,
                                                                   const pb::HealthGate* gate) {
    RETURN_IF_ERROR(store::Selector::parse(selector).status());
    if (version) {
        RETURN_IF_ERROR(require_version(core_.store, *version));
    }
    RETURN_IF_ERROR(resolve(selector).status());
    nd.selector = selector;
    nd.actor = "admin";
    if (gate != nullptr) {
        nd.gate_max_drop_ratio = gate->max_drop_ratio();
        nd.gate_max_alerts_per_second = gate->max_alerts_per_second();
    }
    nd.created_at = wall_clock_ns();
    ASSIGN_OR_RETURN(store::Deployment d, core_.store.create_deployment(nd));
    if (gate != nullptr) {
        core_.rollout->set_gate(d.id, {gate->max_drop_ratio(), gate->max_alerts_per_second()});
    }
    // Every replica's streams (this one's too) read what their sensors should run now.
    core_.publish("deployment", std::to_string(d.id));
    return to_proto(d);
}

absl::StatusOr<pb::Deployment> FleetAdminService::deploy_version(const pb::DeployRequest& req) {
    if (req.canary_percent() > 99) {
        return absl::InvalidArgumentError("canary percent must be 0 (no staging) or 1..99");
    }
    if (req.soak_seconds() > 0 && req.canary_percent() == 0) {
        return absl::InvalidArgumentError(
            "a soak needs a canary stage: give a canary percent (picketctl deploy --canary N)");
    }
    if (req.soak_seconds() > kMaxSoakSeconds) {
        return absl::InvalidArgumentError("soak of " + std::to_string(req.soak_seconds()) +
                                          " s is longer than a day (86400 s)");
    }
    const double ratio = req.gate().max_drop_ratio();
    const double rate = req.gate().max_alerts_per_second();
    if (!std::isfinite(ratio) || ratio < 0 || ratio > 1) {
        return absl::InvalidArgumentError(
            absl::StrCat("health gate: max drop ratio ", ratio, " is not within 0..1"));
    }
    if (!std::isfinite(rate) || rate < 0) {
        return absl::InvalidArgumentError(absl::StrCat("health gate: max alerts per second ", rate,
                                                       " is not a finite number >= 0"));
    }
    store::NewDeployment nd;
    nd.bundle_version = static_cast<int64_t>(req.version());
    nd.kind = store::DeploymentKind::kDeploy;
    nd.canary_percent = static_cast<int>(req.canary_percent());
    nd.soak_seconds = req.soak_seconds();
    return start_deployment(req.selector(), req.version(), nd, &req.gate());
}

grpc::Status FleetAdminService::Deploy(grpc::ServerContext* ctx, const pb::DeployRequest* req,
                                       pb::DeployResponse* resp) {
    return serve(ctx, [&]() -> absl::Status {
        ASSIGN_OR_RETURN(*resp->mutable_deployment(), deploy_version(*req));
        return absl::OkStatus();
    });
}

grpc::Status FleetAdminService::Rollback(grpc::ServerContext* ctx, const pb::RollbackRequest* req,
                                         pb::RollbackResponse* resp) {
    return serve(ctx, [&]() -> absl::Status {
        std::optional<uint64_t> version;
        if (req->has_version()) {
            version = req->version();
        }
        store::NewDeployment nd;
        nd.bundle_version = req->has_version() ? static_cast<int64_t>(req->version()) : 0;
        nd.kind = store::DeploymentKind::kRollback;
        ASSIGN_OR_RETURN(*resp->mutable_deployment(),
                         start_deployment(req->selector(), version, nd, nullptr));
        return absl::OkStatus();
    });
}

grpc::Status FleetAdminService::GetDeployment(grpc::ServerContext* ctx,
                                              const pb::GetDeploymentRequest* req,
                                              pb::GetDeploymentResponse* resp) {
    return serve(ctx, [&]() -> absl::Status {
        ASSIGN_OR_RETURN(int64_t id, parse_id(req->id()));
        ASSIGN_OR_RETURN(store::Deployment d, core_.store.get_deployment(id, !req->counts_only()));
        ASSIGN_OR_RETURN(*resp->mutable_deployment(), to_proto(d));
        return absl::OkStatus();
    });
}

grpc::Status FleetAdminService::WatchDeployment(
    grpc::ServerContext* ctx, const pb::WatchDeploymentRequest* req,
    grpc::ServerWriter<pb::WatchDeploymentResponse>* writer) {
    // Reads the deployment every 100 ms and sends it when it changed: bounded work per
    // watcher, and nothing to keep in step with the rollout's and the streams' writes.
    constexpr auto kPoll = std::chrono::milliseconds(100);
    return serve(ctx, [&]() -> absl::Status {
        ASSIGN_OR_RETURN(int64_t id, parse_id(req->id()));
        std::string last;
        for (;;) {
            ASSIGN_OR_RETURN(store::Deployment d,
                             core_.store.get_deployment(id, !req->counts_only()));
            pb::WatchDeploymentResponse resp;
            ASSIGN_OR_RETURN(*resp.mutable_deployment(), to_proto(d));
            std::string now = resp.SerializeAsString();
            if (now != last) {
                if (!writer->Write(resp)) {
                    return absl::CancelledError("the watcher went away");
                }
                last = std::move(now);
            }
            if (store::is_terminal(d.state) || d.counts.open() == 0) {
                return absl::OkStatus();
            }
            if (ctx->IsCancelled()) {
                return absl::CancelledError("the watcher went away");
            }
            if (core_.stopping) {
                return absl::UnavailableError("the manager is stopping; watch again");
            }
            std::this_thread::sleep_for(kPoll);
        }
    });
}

namespace {

void run_proto(const store::Run& r, Core& core, pb::RunPeriod* p) {
    p->set_sensor(r.sensor);
    *p->mutable_bundle() = core.bundles.ref(r.bundle_version);
    p->set_started_at(r.started_at);
    p->set_ended_at(r.ended_at);
    p->set_packets(static_cast<uint64_t>(r.totals.packets));
    p->set_bytes(static_cast<uint64_t>(r.totals.bytes));
    p->set_drops(static_cast<uint64_t>(r.totals.drops));
    p->set_alerts(static_cast<uint64_t>(r.totals.alerts));
    if (r.deployment_id != 0) {
        p->set_deployment_id(std::to_string(r.deployment_id));
    }
}

}  // namespace

grpc::Status FleetAdminService::History(grpc::ServerContext* ctx, const pb::HistoryRequest* req,
                                        pb::HistoryResponse* resp) {
    return serve(ctx, [&]() -> absl::Status {
        const size_t limit = req->limit() == 0 ? kDefaultLimit : req->limit();
        std::vector<store::Run> runs;
        if (!req->sensor().empty()) {
            ASSIGN_OR_RETURN(store::Sensor s, core_.store.get_sensor(req->sensor()));
            ASSIGN_OR_RETURN(runs, core_.store.list_runs(s.name));
        } else {
            // One query for the fleet (it was one per sensor: 10,000 at 10,000 sensors).
            ASSIGN_OR_RETURN(runs, core_.store.recent_runs(limit));
        }
        std::sort(runs.begin(), runs.end(), [](const store::Run& a, const store::Run& b) {
            return a.started_at != b.started_at ? a.started_at > b.started_at : a.id > b.id;
        });
        for (const store::Run& r : runs) {
            if (static_cast<size_t>(resp->runs_size()) >= limit) {
                break;
            }
            run_proto(r, core_, resp->add_runs());
        }
        // Deployments: their counts are kept in their rows; one sensor's carry only its own
        // target, the fleet's their full target lists only when not counts_only. Bounded by
        // `limit` whatever the fleet's size.
        const int n = static_cast<int>(std::min<size_t>(limit, INT_MAX));
        std::vector<store::Deployment> deployments;
        if (!req->sensor().empty()) {
            ASSIGN_OR_RETURN(deployments, core_.store.deployments_of(req->sensor(), n));
        } else {
            ASSIGN_OR_RETURN(deployments, core_.store.list_deployments(n, !req->counts_only()));
        }
        for (store::Deployment& d : deployments) {
            if (req->counts_only()) {
                d.targets.clear();
            }
            ASSIGN_OR_RETURN(*resp->add_deployments(), to_proto(d));
        }
        return absl::OkStatus();
    });
}

grpc::Status FleetAdminService::ListAlerts(grpc::ServerContext* ctx,
                                           const pb::ListAlertsRequest* req,
                                           pb::ListAlertsResponse* resp) {
    return serve(ctx, [&]() -> absl::Status {
        const std::string& only = req->sensor();
        if (!only.empty()) {
            RETURN_IF_ERROR(store::validate_sensor_name(only));
            // A typo would otherwise look like a quiet sensor.
            RETURN_IF_ERROR(core_.store.get_sensor(only).status());
        }
        // Two snapshots (counters, then the ring): a batch arriving in between may be listed
        // but not yet counted in total_received.
        for (const auto& [name, live] : core_.live.all()) {
            if (only.empty() || name == only) {
                resp->set_total_received(resp->total_received() + live.alerts_received);
                resp->set_dropped_by_sensors(resp->dropped_by_sensors() + live.alerts_dropped);
            }
        }
        const std::vector<LiveState::RecentAlert> ring = core_.live.recent_alerts();
        // Newest first; the token is "a:" + the receive sequence number of the previous page's
        // last (oldest) alert: the next page starts below it as far as the ring still holds.
        ASSIGN_OR_RETURN(PageRequest page,
                         page_request(req->page_size() != 0 ? req->page_size() : req->limit(),
                                      kDefaultAlertLimit, req->page_token(), "a", is_decimal_key));
        const size_t limit = std::min<size_t>(page.size, core_.options.alert_ring_size);
        const uint64_t before = page.after.empty() ? UINT64_MAX : decimal_key(page.after);
        uint64_t last_seq = 0;
        for (auto it = ring.rbegin(); it != ring.rend(); ++it) {
            if ((!only.empty() && it->sensor != only) ||
                (req->sid() != 0 && it->alert.sid() != req->sid()) || it->seq >= before) {
                continue;
            }
            if (static_cast<size_t>(resp->alerts_size()) >= limit) {
                resp->set_next_page_token(page_token("a", std::to_string(last_seq)));
                break;
            }
            last_seq = it->seq;
            pb::AlertEntry* e = resp->add_alerts();
            e->set_sensor(it->sensor);
            *e->mutable_alert() = it->alert;
        }
        return absl::OkStatus();
    });
}

grpc::Status FleetAdminService::RevokeSensor(grpc::ServerContext* ctx,
                                             const pb::RevokeSensorRequest* req,
                                             pb::RevokeSensorResponse* resp) {
    return serve(ctx, [&]() -> absl::Status {
        RETURN_IF_ERROR(store::validate_sensor_name(req->name()));
        // Store first, then the stream: a sensor connecting meanwhile re-checks the store once
        // its session is registered (sensor_link.cc), so it cannot slip between the two.
        ASSIGN_OR_RETURN(bool now,
                         core_.store.revoke_sensor(req->name(), wall_clock_ns(), "admin"));
        resp->set_revoked_now(now);
        resp->set_disconnected(core_.hub.revoke(req->name()));
        // Its stream may be on another replica; its open targets were cancelled, so
        // deployments may move on (the handler kicks the rollout).
        core_.publish("revoke", req->name());
        ASSIGN_OR_RETURN(store::Sensor s, core_.store.get_sensor(req->name()));
        *resp->mutable_sensor() = sensor_proto(s, core_);
        log::warning("sensor " + req->name() + " revoked" +
                     (resp->disconnected() ? " (stream closed)" : ""));
        return absl::OkStatus();
    });
}

grpc::Status FleetAdminService::ReadmitSensor(grpc::ServerContext* ctx,
                                              const pb::ReadmitSensorRequest* req,
                                              pb::ReadmitSensorResponse* resp) {
    return serve(ctx, [&]() -> absl::Status {
        RETURN_IF_ERROR(store::validate_sensor_name(req->name()));
        ASSIGN_OR_RETURN(bool now,
                         core_.store.readmit_sensor(req->name(), wall_clock_ns(), "admin"));
        resp->set_readmitted_now(now);
        ASSIGN_OR_RETURN(store::Sensor s, core_.store.get_sensor(req->name()));
        *resp->mutable_sensor() = sensor_proto(s, core_);
        if (now) {
            log::info("sensor " + req->name() + " readmitted: it may enroll again");
        }
        return absl::OkStatus();
    });
}

}  // namespace picket::manager::service
