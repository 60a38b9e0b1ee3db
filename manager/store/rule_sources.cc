// Store queries of the rules update (manager/rules): the sources the manager fetches, the
// update's policy files and the history of updates with what each source contributed.
#include <utility>

#include "common/strings.h"
#include "manager/store/internal.h"
#include "manager/store/writer.h"

namespace picket::manager::store {

using strings::cat;

namespace {

// Headers are stored one per line (the service refuses CR and LF inside a header).
std::string join_headers(const std::vector<std::string>& headers) {
    return strings::join(headers, "\n");
}

std::vector<std::string> split_headers(const std::string& text) {
    std::vector<std::string> out;
    for (std::string_view h : strings::split(text, '\n')) {
        out.emplace_back(h);
    }
    return out;
}

absl::Status source_not_found(std::string_view name) {
    return absl::NotFoundError(cat("rule source '", name, "' not found"));
}

}  // namespace

// ---- Writes

absl::Status Store::add_rule_source(const RuleSourceRow& source, const std::string& actor) {
    return impl_->write_status([source, actor](Conn& c) -> absl::Status {
        ASSIGN_OR_RETURN(Stmt q, c.prepare("SELECT 1 FROM rule_sources WHERE name = ?"));
        q.bind(1, source.name);
        ASSIGN_OR_RETURN(bool exists, q.step());
        if (exists) {
            return absl::AlreadyExistsError(
                cat("rule source '", source.name, "' already exists (remove it first)"));
        }
        ASSIGN_OR_RETURN(Stmt s, c.prepare("INSERT INTO rule_sources(name, location, headers, "
                                           "checksum_url, enabled, created_at) "
                                           "VALUES(?, ?, ?, ?, ?, ?)"));
        s.bind(1, source.name)
            .bind(2, source.location)
            .bind(3, join_headers(source.headers))
            .bind(4, source.checksum_url)
            .bind(5, int64_t{source.enabled ? 1 : 0})
            .bind(6, source.created_at);
        RETURN_IF_ERROR(s.run());
        return log_event(c, source.created_at, actor, "rules.source.add", "", 0, 0,
                         cat(source.name, " ", source.location));
    });
}

absl::Status Store::remove_rule_source(const std::string& name, int64_t ts,
                                       const std::string& actor) {
    return impl_->write_status([name, ts, actor](Conn& c) -> absl::Status {
        ASSIGN_OR_RETURN(Stmt s, c.prepare("DELETE FROM rule_sources WHERE name = ?"));
        s.bind(1, name);
        RETURN_IF_ERROR(s.run());
        if (c.changes() == 0) {
            return source_not_found(name);
        }
        return log_event(c, ts, actor, "rules.source.remove", "", 0, 0, name);
    });
}

absl::Status Store::set_rule_source_enabled(const std::string& name, bool enabled, int64_t ts,
                                            const std::string& actor) {
    return impl_->write_status([=](Conn& c) -> absl::Status {
        ASSIGN_OR_RETURN(Stmt s, c.prepare("UPDATE rule_sources SET enabled = ? WHERE name = ?"));
        s.bind(1, int64_t{enabled ? 1 : 0}).bind(2, name);
        RETURN_IF_ERROR(s.run());
        if (c.changes() == 0) {
            return source_not_found(name);
        }
        return log_event(c, ts, actor, enabled ? "rules.source.enable" : "rules.source.disable", "",
                         0, 0, name);
    });
}

absl::Status Store::record_rule_fetch(const RuleSourceRow& fetched, const std::string& error) {
    return impl_->write_status([fetched, error](Conn& c) -> absl::Status {
        if (!error.empty()) {
            ASSIGN_OR_RETURN(Stmt s,
                             c.prepare("UPDATE rule_sources SET last_error = ? WHERE name = ?"));
            s.bind(1, error).bind(2, fetched.name);
            RETURN_IF_ERROR(s.run());
        } else {
            ASSIGN_OR_RETURN(Stmt s, c.prepare("UPDATE rule_sources SET etag = ?, "
                                               "last_modified = ?, sha256 = ?, fetched_at = ?, "
                                               "rules = ?, last_error = '' WHERE name = ?"));
            s.bind(1, fetched.etag)
                .bind(2, fetched.last_modified)
                .bind(3, fetched.sha256)
                .bind(4, fetched.fetched_at)
                .bind(5, fetched.rules)
                .bind(6, fetched.name);
            RETURN_IF_ERROR(s.run());
        }
        return c.changes() == 0 ? source_not_found(fetched.name) : absl::OkStatus();
    });
}

absl::Status Store::put_rule_policy(const std::vector<RulePolicyRow>& files,
                                    const std::string& actor) {
    return impl_->write_status([files, actor](Conn& c) -> absl::Status {
        for (const auto& f : files) {
            // Prepared per row: a Stmt is reset (for the next binding) when it goes away.
            ASSIGN_OR_RETURN(Stmt s, c.prepare("INSERT INTO rule_policy(name, content, "
                                               "updated_at) VALUES(?1, ?2, ?3) ON CONFLICT(name) "
                                               "DO UPDATE SET content = ?2, updated_at = ?3"));
            s.bind(1, f.name).bind(2, f.content).bind(3, f.updated_at);
            RETURN_IF_ERROR(s.run());
            RETURN_IF_ERROR(log_event(c, f.updated_at, actor, "rules.policy.put", "", 0, 0,
                                      cat(f.name, " (", f.content.size(), " bytes)")));
        }
        return absl::OkStatus();
    });
}

absl::Status Store::remove_rule_policy(const std::string& name, int64_t ts,
                                       const std::string& actor) {
    return impl_->write_status([name, ts, actor](Conn& c) -> absl::Status {
        ASSIGN_OR_RETURN(Stmt s, c.prepare("DELETE FROM rule_policy WHERE name = ?"));
        s.bind(1, name);
        RETURN_IF_ERROR(s.run());
        if (c.changes() == 0) {
            return absl::NotFoundError(cat("no policy file '", name, "' is stored"));
        }
        return log_event(c, ts, actor, "rules.policy.remove", "", 0, 0, name);
    });
}

absl::StatusOr<int64_t> Store::record_rule_update(const RuleUpdateRow& update) {
    return impl_->write<int64_t>([update](Conn& c) -> absl::StatusOr<int64_t> {
        ASSIGN_OR_RETURN(Stmt s, c.prepare("INSERT INTO rule_updates(started_at, finished_at, "
                                           "trigger, result, message, version) "
                                           "VALUES(?, ?, ?, ?, ?, ?) RETURNING id"));
        s.bind(1, update.started_at)
            .bind(2, update.finished_at)
            .bind(3, update.trigger)
            .bind(4, update.result)
            .bind(5, update.message)
            .bind_ref(6, update.version);
        RETURN_IF_ERROR(s.expect_row([] { return absl::InternalError("no id returned"); }));
        int64_t id = s.i64(0);
        for (const auto& r : update.sources) {
            ASSIGN_OR_RETURN(Stmt src, c.prepare("INSERT INTO rule_update_sources(update_id, "
                                                 "name, sha256, etag, not_modified, files, "
                                                 "rules, rules_enabled) "
                                                 "VALUES(?, ?, ?, ?, ?, ?, ?, ?)"));
            src.bind(1, id)
                .bind(2, r.name)
                .bind(3, r.sha256)
                .bind(4, r.etag)
                .bind(5, int64_t{r.not_modified ? 1 : 0})
                .bind(6, r.files)
                .bind(7, r.rules)
                .bind(8, r.rules_enabled);
            RETURN_IF_ERROR(src.run());
        }
        RETURN_IF_ERROR(log_event(c, update.finished_at, update.trigger, "rules.update", "",
                                  update.version, 0, cat(update.result, ": ", update.message)));
        return id;
    });
}

// ---- Reads

absl::StatusOr<std::vector<RuleSourceRow>> Store::list_rule_sources() {
    return impl_->read([](Conn& c) -> absl::StatusOr<std::vector<RuleSourceRow>> {
        ASSIGN_OR_RETURN(Stmt s, c.prepare("SELECT name, location, headers, checksum_url, "
                                           "enabled, created_at, etag, last_modified, sha256, "
                                           "fetched_at, rules, last_error FROM rule_sources "
                                           "ORDER BY name"));
        return collect<RuleSourceRow>(s, [](const Stmt& r) {
            RuleSourceRow row;
            std::string headers;
            r.get(0, row.name, row.location, headers, row.checksum_url, row.enabled, row.created_at,
                  row.etag, row.last_modified, row.sha256, row.fetched_at, row.rules,
                  row.last_error);
            row.headers = split_headers(headers);
            return row;
        });
    });
}

absl::StatusOr<std::vector<RulePolicyRow>> Store::rule_policy() {
    return impl_->read([](Conn& c) -> absl::StatusOr<std::vector<RulePolicyRow>> {
        ASSIGN_OR_RETURN(Stmt s, c.prepare("SELECT name, content, updated_at FROM rule_policy "
                                           "ORDER BY name"));
        return collect<RulePolicyRow>(s, [](const Stmt& r) {
            RulePolicyRow row;
            r.get(0, row.name, row.content, row.updated_at);
            return row;
        });
    });
}

absl::StatusOr<std::vector<RuleUpdateRow>> Store::rule_updates(int limit) {
    return impl_->read([limit](Conn& c) -> absl::StatusOr<std::vector<RuleUpdateRow>> {
        ASSIGN_OR_RETURN(Stmt s, c.prepare("SELECT id, started_at, finished_at, trigger, result, "
                                           "message, coalesce(version, 0) FROM rule_updates "
                                           "ORDER BY id DESC LIMIT ?"));
        s.bind(1, static_cast<int64_t>(limit));
        ASSIGN_OR_RETURN(std::vector<RuleUpdateRow> out,
                         collect<RuleUpdateRow>(s, [](const Stmt& r) {
                             RuleUpdateRow row;
                             r.get(0, row.id, row.started_at, row.finished_at, row.trigger,
                                   row.result, row.message, row.version);
                             return row;
                         }));
        for (auto& row : out) {
            ASSIGN_OR_RETURN(Stmt src, c.prepare("SELECT name, sha256, etag, not_modified, "
                                                 "files, rules, rules_enabled FROM "
                                                 "rule_update_sources WHERE update_id = ? "
                                                 "ORDER BY name"));
            src.bind(1, row.id);
            ASSIGN_OR_RETURN(row.sources, collect<RuleUpdateSource>(src, [](const Stmt& r) {
                                 RuleUpdateSource u;
                                 r.get(0, u.name, u.sha256, u.etag, u.not_modified, u.files,
                                       u.rules, u.rules_enabled);
                                 return u;
                             }));
        }
        return out;
    });
}

absl::StatusOr<Store::RuleUpdateSummary> Store::rule_update_summary() {
    return impl_->read([](Conn& c) -> absl::StatusOr<RuleUpdateSummary> {
        ASSIGN_OR_RETURN(Stmt s,
                         c.prepare("SELECT count(CASE WHEN result = 'new_version' THEN 1 END), "
                                   "count(CASE WHEN result = 'unchanged' THEN 1 END), "
                                   "count(CASE WHEN result = 'failed' THEN 1 END), "
                                   "coalesce(max(CASE WHEN result != 'failed' THEN "
                                   "finished_at END), 0) FROM rule_updates"));
        RETURN_IF_ERROR(s.expect_row([] { return absl::InternalError("no summary row"); }));
        RuleUpdateSummary out;
        s.get(0, out.new_version, out.unchanged, out.failed, out.last_success_at);
        return out;
    });
}

}  // namespace picket::manager::store
