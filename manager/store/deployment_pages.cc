// Store reads behind the history and a deployment's details whose cost does not grow with the
// fleet times the number of deployments: one sensor's deployments with only its own target
// (the counts are kept in the deployment's row), and each target's previous version in one query
// (it was one run-history read per target sensor: 10,000 queries per GetDeployment at 10,000
// sensors).
#include "manager/store/internal.h"
#include "manager/store/writer.h"

namespace picket::manager::store {

absl::StatusOr<std::vector<Deployment>> Store::deployments_of(const std::string& sensor,
                                                              int limit) {
    return impl_->read([&, limit](Conn& c) -> absl::StatusOr<std::vector<Deployment>> {
        ASSIGN_OR_RETURN(int64_t sid, sensor_id(c, sensor));
        ASSIGN_OR_RETURN(Stmt s, c.prepare("SELECT deployment_id FROM deployment_targets "
                                           "WHERE sensor_id = ? ORDER BY deployment_id DESC "
                                           "LIMIT ?"));
        s.bind(1, sid).bind(2, static_cast<int64_t>(limit));
        ASSIGN_OR_RETURN(std::vector<int64_t> ids,
                         collect<int64_t>(s, [](const Stmt& r) { return r.i64(0); }));
        std::vector<Deployment> out;
        out.reserve(ids.size());
        for (int64_t id : ids) {
            ASSIGN_OR_RETURN(Deployment d, load_deployment(c, id, false));
            ASSIGN_OR_RETURN(
                Stmt t, c.prepare("SELECT s.name, t.bundle_version, t.stage, t.state, t.error, "
                                  "t.created_at, coalesce(t.sent_at, 0), "
                                  "coalesce(t.finished_at, 0), t.updated_at FROM "
                                  "deployment_targets t JOIN sensors s ON s.id = t.sensor_id "
                                  "WHERE t.deployment_id = ? AND t.sensor_id = ?"));
            t.bind(1, id).bind(2, sid);
            ASSIGN_OR_RETURN(d.targets, collect<Target>(t, target_from_row));
            out.push_back(std::move(d));
        }
        return out;
    });
}

absl::StatusOr<std::map<std::string, int64_t>> Store::previous_versions(int64_t deployment_id,
                                                                        const std::string& sensor) {
    return impl_->read(
        [&, deployment_id](Conn& c) -> absl::StatusOr<std::map<std::string, int64_t>> {
            // The run open at the deployment's creation: started by then, not ended by then; the
            // newest such run when several overlap.
            ASSIGN_OR_RETURN(
                Stmt s,
                c.prepare("SELECT s.name, (SELECT r.bundle_version FROM runs r WHERE r.sensor_id = "
                          "t.sensor_id AND r.started_at <= d.created_at AND (r.ended_at IS NULL OR "
                          "r.ended_at > d.created_at) ORDER BY r.id DESC LIMIT 1) FROM "
                          "deployment_targets t JOIN deployments d ON d.id = t.deployment_id JOIN "
                          "sensors s ON s.id = t.sensor_id WHERE t.deployment_id = ?1 AND (?2 = '' "
                          "OR s.name = ?2)"));
            s.bind(1, deployment_id).bind(2, sensor);
            std::map<std::string, int64_t> out;
            RETURN_IF_ERROR(each_row(s, [&](const Stmt& r) {
                if (!r.null(1)) {
                    out.emplace(r.text(0), r.i64(1));
                }
            }));
            return out;
        });
}

}  // namespace picket::manager::store
