// FleetAdmin's rules RPCs: the sources the manager fetches, the update's policy files, and the
// update itself (fetch, merge, policy, validate, store a new version when something changed,
// optionally deploy), each run recorded in the store's history.
#include <algorithm>
#include <cctype>
#include <filesystem>
#include <map>
#include <set>

#include "common/bundle/bundle.h"
#include "common/log.h"
#include "common/strings.h"
#include "common/time_util.h"
#include "manager/rules/rules.h"
#include "manager/service/internal.h"
#include "manager/service/paging.h"
#include "manager/status.h"

namespace picket::manager::service {
namespace {

namespace pb = picket::v1;
using strings::cat;

constexpr uint32_t kDefaultUpdateHistory = 50;

pb::RuleSource source_proto(const store::RuleSourceRow& r) {
    pb::RuleSource p;
    p.set_name(r.name);
    p.set_location(r.location);
    for (const auto& h : r.headers) {
        p.add_headers(h);
    }
    p.set_checksum_url(r.checksum_url);
    p.set_enabled(r.enabled);
    p.set_etag(r.etag);
    p.set_last_modified(r.last_modified);
    p.set_sha256(r.sha256);
    p.set_fetched_at(r.fetched_at);
    p.set_rules(static_cast<uint32_t>(r.rules));
    p.set_last_error(r.last_error);
    return p;
}

rules::SourceSpec spec_of(const store::RuleSourceRow& r) {
    rules::SourceSpec s;
    s.name = r.name;
    s.location = r.location;
    s.headers = r.headers;
    s.checksum_url = r.checksum_url;
    s.enabled = r.enabled;
    return s;
}

// The file name a single-file source's rules get: the location's last component.
std::string rules_name_of(const std::string& location) {
    std::string base = location;
    if (size_t q = base.find_first_of("?#"); q != std::string::npos) {
        base.resize(q);
    }
    while (!base.empty() && base.back() == '/') {
        base.pop_back();
    }
    if (size_t slash = base.rfind('/'); slash != std::string::npos) {
        base = base.substr(slash + 1);
    }
    if (base.empty()) {
        base = "source";
    }
    return base.ends_with(".rules") ? base : base + ".rules";
}

std::filesystem::path archive_dir(const ManagerOptions& o, const std::string& db_path) {
    if (!o.rules_dir.empty()) {
        return o.rules_dir;
    }
    if (store::is_postgres_dsn(db_path)) {
        // No database file to sit beside: the manager's working directory.
        return std::filesystem::current_path() / "rule-sources";
    }
    return std::filesystem::path(db_path).parent_path() / "rule-sources";
}

absl::StatusOr<store::RuleSourceRow> find_source(store::Store& st, const std::string& name) {
    ASSIGN_OR_RETURN(std::vector<store::RuleSourceRow> all, st.list_rule_sources());
    for (auto& r : all) {
        if (r.name == name) {
            return r;
        }
    }
    return absl::NotFoundError(cat("rule source '", name, "' not found"));
}

}  // namespace

grpc::Status FleetAdminService::AddRuleSource(grpc::ServerContext* ctx,
                                              const pb::AddRuleSourceRequest* req,
                                              pb::AddRuleSourceResponse* resp) {
    return serve(ctx, [&]() -> absl::Status {
        const pb::RuleSource& in = req->source();
        store::RuleSourceRow row;
        row.name = in.name();
        row.location = in.location();
        row.headers.assign(in.headers().begin(), in.headers().end());
        row.checksum_url = in.checksum_url();
        row.enabled = true;
        row.created_at = wall_clock_ns();
        RETURN_IF_ERROR(rules::check_source_spec(spec_of(row)));
        RETURN_IF_ERROR(core_.store.add_rule_source(row, "admin"));
        *resp->mutable_source() = source_proto(row);
        log::info("rule source '" + row.name + "' added: " + row.location);
        return absl::OkStatus();
    });
}

grpc::Status FleetAdminService::ListRuleSources(grpc::ServerContext* ctx,
                                                const pb::ListRuleSourcesRequest* req,
                                                pb::ListRuleSourcesResponse* resp) {
    return serve(ctx, [&]() -> absl::Status {
        // Sorted by name; the token is "s:" + the previous page's last name (paging.h).
        ASSIGN_OR_RETURN(
            PageRequest page,
            page_request(req->page_size(), kMaxPageSize, req->page_token(), "s",
                         [](std::string_view n) {
                             return n.size() <= 64 && std::all_of(n.begin(), n.end(), [](char c) {
                                        return std::isalnum(static_cast<unsigned char>(c)) ||
                                               c == '.' || c == '_' || c == '-';
                                    });
                         }));
        ASSIGN_OR_RETURN(std::vector<store::RuleSourceRow> all, core_.store.list_rule_sources());
        // Sorted by name by the store.
        resp->set_next_page_token(forward_page(
            all, page, "s",
            [](const store::RuleSourceRow& r) -> const std::string& { return r.name; },
            [&](const store::RuleSourceRow& r) { *resp->add_sources() = source_proto(r); }));
        return absl::OkStatus();
    });
}

grpc::Status FleetAdminService::RemoveRuleSource(grpc::ServerContext* ctx,
                                                 const pb::RemoveRuleSourceRequest* req,
                                                 pb::RemoveRuleSourceResponse*) {
    return serve(ctx, [&]() -> absl::Status {
        return core_.store.remove_rule_source(req->name(), wall_clock_ns(), "admin");
    });
}

grpc::Status FleetAdminService::SetRuleSourceEnabled(grpc::ServerContext* ctx,
                                                     const pb::SetRuleSourceEnabledRequest* req,
                                                     pb::SetRuleSourceEnabledResponse* resp) {
    return serve(ctx, [&]() -> absl::Status {
        RETURN_IF_ERROR(core_.store.set_rule_source_enabled(req->name(), req->enabled(),
                                                            wall_clock_ns(), "admin"));
        ASSIGN_OR_RETURN(store::RuleSourceRow row, find_source(core_.store, req->name()));
        *resp->mutable_source() = source_proto(row);
        return absl::OkStatus();
    });
}

grpc::Status FleetAdminService::PutRulePolicy(grpc::ServerContext* ctx,
                                              const pb::PutRulePolicyRequest* req,
                                              pb::PutRulePolicyResponse*) {
    return serve(ctx, [&]() -> absl::Status {
        if (req->files_size() == 0) {
            return absl::InvalidArgumentError("no policy file given");
        }
        std::map<std::string, std::string> files;
        std::vector<store::RulePolicyRow> rows;
        int64_t now = wall_clock_ns();
        for (const pb::RulePolicyFile& f : req->files()) {
            if (!files.emplace(f.name(), f.content()).second) {
                return absl::InvalidArgumentError(cat(f.name(), ": given twice"));
            }
            rows.push_back({f.name(), f.content(), now});
        }
        RETURN_IF_ERROR(rules::check_policy_files(files));
        return core_.store.put_rule_policy(rows, "admin");
    });
}

grpc::Status FleetAdminService::GetRulePolicy(grpc::ServerContext* ctx,
                                              const pb::GetRulePolicyRequest*,
                                              pb::GetRulePolicyResponse* resp) {
    return serve(ctx, [&]() -> absl::Status {
        ASSIGN_OR_RETURN(std::vector<store::RulePolicyRow> rows, core_.store.rule_policy());
        for (const auto& r : rows) {
            pb::RulePolicyFile* f = resp->add_files();
            f->set_name(r.name);
            f->set_content(r.content);
            f->set_updated_at(r.updated_at);
        }
        return absl::OkStatus();
    });
}

grpc::Status FleetAdminService::RemoveRulePolicy(grpc::ServerContext* ctx,
                                                 const pb::RemoveRulePolicyRequest* req,
                                                 pb::RemoveRulePolicyResponse*) {
    return serve(ctx, [&]() -> absl::Status {
        return core_.store.remove_rule_policy(req->name(), wall_clock_ns(), "admin");
    });
}

grpc::Status FleetAdminService::UpdateRules(grpc::ServerContext* ctx,
                                            const pb::UpdateRulesRequest* req,
                                            pb::UpdateRulesResponse* resp) {
    return serve(ctx, [&]() -> absl::Status { return update_rules(*req, "picketctl", resp); });
}

absl::Status FleetAdminService::update_rules(const pb::UpdateRulesRequest& req,
                                             const std::string& trigger,
                                             pb::UpdateRulesResponse* resp) {
    std::lock_guard<std::mutex> one_at_a_time(core_.rules_update_mu);
    store::RuleUpdateRow history;
    history.trigger = trigger;
    history.started_at = wall_clock_ns();
    // Every failure is recorded in the history and returned; nothing is stored or deployed.
    auto fail = [&](absl::Status st) -> absl::Status {
        history.finished_at = wall_clock_ns();
        history.result = "failed";
        history.message = std::string(st.message());
        if (auto id = core_.store.record_rule_update(history); id.ok()) {
            resp->set_update_id(static_cast<uint64_t>(*id));
        }
        log::warning("rules update failed: " + history.message);
        return st;
    };

    auto all = core_.store.list_rule_sources();
    if (!all.ok()) {
        return fail(all.status());
    }
    std::set<std::string> wanted(req.sources().begin(), req.sources().end());
    for (const std::string& name : wanted) {
        auto it = std::find_if(all->begin(), all->end(),
                               [&](const store::RuleSourceRow& r) { return r.name == name; });
        if (it == all->end()) {
            return fail(absl::NotFoundError(cat("rule source '", name, "' not found")));
        }
        if (!it->enabled) {
            return fail(absl::FailedPreconditionError(
                cat("rule source '", name, "' is disabled (picketctl rules source enable ", name,
                    ")")));
        }
    }
    rules::ArchiveStore archives(archive_dir(core_.options, core_.store.path()));
    rules::UpdateInput input;
    std::vector<store::RuleSourceRow> fetched;
    std::string sources_text;
    for (const store::RuleSourceRow& row : *all) {
        if (!row.enabled) {
            continue;
        }
        store::RuleUpdateSource used;
        used.name = row.name;
        std::string bytes;
        std::string kind;
        const bool named = wanted.empty() || wanted.contains(row.name);
        if (!named && row.sha256.empty()) {
            // --source names others: a source never fetched has no rules in any bundle yet, and
            // fetching it here is what the operator asked not to do.
            resp->add_warnings(cat("source ", row.name,
                                   ": never fetched, left out (picketctl rules update --source ",
                                   row.name, ")"));
            continue;
        }
        bool reuse = !named;
        if (reuse) {
            auto stored = archives.get(row.sha256);
            if (!stored.ok()) {
                reuse = false;  // fetch it again rather than fail
            } else {
                bytes = std::move(*stored);
                used.sha256 = row.sha256;
                used.etag = row.etag;
                used.not_modified = true;
            }
        }
        if (!reuse) {
            rules::FetchState prev{row.etag, row.last_modified, row.sha256};
            auto got = rules::fetch_source(spec_of(row), prev);
            if (!got.ok()) {
                core_.store.record_rule_fetch(row, std::string(got.status().message()))
                    .IgnoreError();
                return fail(got.status());
            }
            if (got->not_modified) {
                auto stored = archives.get(row.sha256);
                if (!stored.ok()) {
                    // The server says unchanged but our copy is gone: fetch without validators.
                    got = rules::fetch_source(spec_of(row), rules::FetchState{});
                    if (!got.ok()) {
                        return fail(got.status());
                    }
                } else {
                    bytes = std::move(*stored);
                }
            }
            if (!got->not_modified) {
                bytes = std::move(got->bytes);
                auto put = archives.put(bytes);
                if (!put.ok()) {
                    return fail(absl::Status(put.status().code(), cat("source ", row.name,
                                                                      ": cannot keep the fetched "
                                                                      "archive: ",
                                                                      put.status().message())));
                }
            }
            kind = got->kind;
            used.sha256 = got->sha256;
            used.etag = got->etag;
            used.not_modified = got->not_modified;
            store::RuleSourceRow f = row;
            f.etag = got->etag;
            f.last_modified = got->last_modified;
            f.sha256 = got->sha256;
            f.fetched_at = wall_clock_ns();
            fetched.push_back(std::move(f));
        }
        auto files = rules::extract_rule_files(row.name, bytes, kind, rules_name_of(row.location));
        if (!files.ok()) {
            core_.store.record_rule_fetch(row, std::string(files.status().message())).IgnoreError();
            return fail(files.status());
        }
        input.sources.push_back({row.name, used.sha256, std::move(*files)});
        history.sources.push_back(used);
        sources_text +=
            cat(sources_text.empty() ? "" : ", ", row.name, "@", used.sha256.substr(0, 12));
    }
    auto policy = core_.store.rule_policy();
    if (!policy.ok()) {
        return fail(policy.status());
    }
    for (const auto& p : *policy) {
        input.policy_files[p.name] = p.content;
    }
    auto latest = core_.store.latest_version();
    if (!latest.ok()) {
        return fail(latest.status());
    }
    pb::Bundle previous;
    if (*latest > 0) {
        store::BundleInfo info;
        auto b = load_bundle(static_cast<uint64_t>(*latest), &info);
        if (!b.ok()) {
            return fail(b.status());
        }
        previous = std::move(*b);
        previous.mutable_manifest()->set_version(static_cast<uint64_t>(*latest));
        input.previous = &previous;
    }
    input.author = req.author().empty() ? std::string("rules-update") : req.author();
    input.message = cat("rules update from ", sources_text);
    auto out = rules::build_update(input);
    if (!out.ok()) {
        return fail(out.status());
    }

    // What the sources held, and what the policy did.
    for (size_t i = 0; i < out->sources.size() && i < history.sources.size(); ++i) {
        history.sources[i].files = out->sources[i].files;
        history.sources[i].rules = out->sources[i].rules;
        history.sources[i].rules_enabled = out->sources[i].rules_enabled;
        pb::RuleSourceResult* r = resp->add_sources();
        r->set_name(history.sources[i].name);
        r->set_sha256(history.sources[i].sha256);
        r->set_etag(history.sources[i].etag);
        r->set_not_modified(history.sources[i].not_modified);
        r->set_files(out->sources[i].files);
        r->set_rules(out->sources[i].rules);
        r->set_rules_enabled(out->sources[i].rules_enabled);
    }
    for (store::RuleSourceRow& f : fetched) {
        for (const auto& s : out->sources) {
            if (s.name == f.name) {
                f.rules = s.rules;
            }
        }
        core_.store.record_rule_fetch(f, "").IgnoreError();
    }
    resp->set_rules(out->rules);
    resp->set_rules_enabled(out->rules_enabled);
    resp->set_policy_enabled(out->policy.enabled);
    resp->set_policy_disabled(out->policy.disabled);
    resp->set_policy_dropped(out->policy.dropped);
    resp->set_policy_modified(out->policy.modified);
    resp->set_unsupported(out->unsupported);
    for (const auto& u : out->unsupported_rules) {
        resp->add_unsupported_rules(u);
    }
    for (const auto& w : out->warnings) {
        resp->add_warnings(w);
    }

    history.finished_at = wall_clock_ns();
    if (!out->changed) {
        history.result = "unchanged";
        history.message = cat("no change: version ", *latest, " already holds ", sources_text);
        resp->set_message(history.message);
        auto id = core_.store.record_rule_update(history);
        if (id.ok()) {
            resp->set_update_id(static_cast<uint64_t>(*id));
        }
        log::info("rules update: " + history.message);
        return absl::OkStatus();
    }
    auto pushed = store_bundle(out->bundle);
    if (!pushed.ok()) {
        return fail(pushed.status());
    }
    resp->set_version(static_cast<uint64_t>(pushed->version));
    resp->set_sha256(bundle::bundle_sha256(out->bundle));
    out->diff.set_to_version(static_cast<uint64_t>(pushed->version));
    *resp->mutable_diff() = std::move(out->diff);
    history.result = "new_version";
    history.version = pushed->version;
    history.message = cat("version ", pushed->version, " from ", sources_text);
    if (!pushed->created) {
        // The result differs from the newest bundle but equals an older one (a policy change
        // undone): that version is reused, as a push of the same content would.
        history.message += cat(" (the same content as stored version ", pushed->version,
                               ": reused, nothing new stored)");
    }
    if (req.has_deploy() && !req.deploy().selector().empty()) {
        pb::DeployRequest d = req.deploy();
        d.set_version(static_cast<uint64_t>(pushed->version));
        auto dep = deploy_version(d);
        if (!dep.ok()) {
            // The version is stored; only its deployment failed: say both.
            history.message += cat("; deploy failed: ", dep.status().message());
            history.finished_at = wall_clock_ns();
            auto id = core_.store.record_rule_update(history);
            if (id.ok()) {
                resp->set_update_id(static_cast<uint64_t>(*id));
            }
            return absl::Status(
                dep.status().code(),
                cat("version ", pushed->version,
                    " stored, but its deployment was refused: ", dep.status().message()));
        }
        *resp->mutable_deployment() = std::move(*dep);
        history.message += cat("; deployment ", resp->deployment().id());
    }
    resp->set_message(history.message);
    history.finished_at = wall_clock_ns();
    auto id = core_.store.record_rule_update(history);
    if (id.ok()) {
        resp->set_update_id(static_cast<uint64_t>(*id));
    }
    log::info("rules update: " + history.message);
    return absl::OkStatus();
}

grpc::Status FleetAdminService::RuleUpdateHistory(grpc::ServerContext* ctx,
                                                  const pb::RuleUpdateHistoryRequest* req,
                                                  pb::RuleUpdateHistoryResponse* resp) {
    return serve(ctx, [&]() -> absl::Status {
        int limit = static_cast<int>(
            std::min<uint32_t>(req->limit() == 0 ? kDefaultUpdateHistory : req->limit(), 10000));
        ASSIGN_OR_RETURN(std::vector<store::RuleUpdateRow> rows, core_.store.rule_updates(limit));
        for (const auto& r : rows) {
            pb::RuleUpdate* u = resp->add_updates();
            u->set_id(static_cast<uint64_t>(r.id));
            u->set_started_at(r.started_at);
            u->set_finished_at(r.finished_at);
            u->set_trigger(r.trigger);
            u->set_result(r.result);
            u->set_message(r.message);
            u->set_version(static_cast<uint64_t>(r.version));
            for (const auto& s : r.sources) {
                pb::RuleSourceResult* p = u->add_sources();
                p->set_name(s.name);
                p->set_sha256(s.sha256);
                p->set_etag(s.etag);
                p->set_not_modified(s.not_modified);
                p->set_files(static_cast<uint32_t>(s.files));
                p->set_rules(static_cast<uint32_t>(s.rules));
                p->set_rules_enabled(static_cast<uint32_t>(s.rules_enabled));
            }
        }
        return absl::OkStatus();
    });
}

}  // namespace picket::manager::service
