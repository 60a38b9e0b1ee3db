// Bootstrap enrollment (SensorLink.Enroll), certificate renewal (SensorLink.RenewCertificate)
// and the bootstrap tokens' admin RPCs. The manager signs only what it checked: the token
// (store), the CSR (pki::parse_and_check_csr: proof of possession, P-256, a valid CN), the
// token's name pattern and the sensor's revocation; the extensions are its own (pki::sign_csr).
#include <regex>

#include "common/log.h"
#include "common/pki/pki.h"
#include "common/time_util.h"
#include "manager/service/internal.h"
#include "manager/service/paging.h"
#include "manager/status.h"

namespace picket::manager::service {
namespace {

namespace pb = picket::v1;

constexpr int64_t kNsPerSec = 1'000'000'000;
constexpr uint64_t kDefaultTokenTtlSeconds = 86400;
constexpr uint64_t kMaxTokenTtlSeconds = 365ULL * 86400;
constexpr size_t kMaxNamePatternLength = 256;

absl::Status enrollment_configured(const Core& core) {
    if (!core.ca) {
        return absl::FailedPreconditionError(
            "enrollment is not configured on this manager: it has no CA key (tls.ca-key in "
            "manager.yaml or --ca-key)");
    }
    return absl::OkStatus();
}

absl::StatusOr<std::regex> compile_pattern(const std::string& pattern) {
    if (pattern.size() > kMaxNamePatternLength) {
        return absl::InvalidArgumentError("name pattern is longer than " +
                                          std::to_string(kMaxNamePatternLength) + " characters");
    }
    try {
        return std::regex(pattern, std::regex::ECMAScript);
    } catch (const std::regex_error& e) {
        return absl::InvalidArgumentError("name pattern '" + pattern + "': " + e.what());
    }
}

pb::BootstrapTokenInfo token_proto(const store::BootstrapToken& t, int64_t now) {
    pb::BootstrapTokenInfo p;
    p.set_id(t.id);
    p.set_uses(static_cast<uint32_t>(t.uses));
    p.set_used(static_cast<uint32_t>(t.used));
    p.set_expires_at(t.expires_at);
    p.set_created_at(t.created_at);
    p.set_revoked_at(t.revoked_at);
    p.mutable_labels()->insert(t.labels.begin(), t.labels.end());
    p.set_name_pattern(t.name_pattern);
    p.set_state(t.state(now));
    p.set_created_by(t.created_by);
    return p;
}

// The client certificate the TLS stack verified, or "" without one.
std::string peer_cert(grpc::ServerContext* ctx) {
    std::shared_ptr<const grpc::AuthContext> auth = ctx->auth_context();
    if (auth == nullptr) {
        return "";
    }
    std::vector<grpc::string_ref> certs = auth->FindPropertyValues("x509_pem_cert");
    return certs.empty() ? "" : std::string(certs[0].data(), certs[0].size());
}

absl::Status enroll(Core& core, const pb::EnrollRequest& req, pb::EnrollResponse* resp,
                    std::string* name_out) {
    RETURN_IF_ERROR(enrollment_configured(core));
    absl::StatusOr<pki::BootstrapToken> token = pki::parse_bootstrap_token(req.token());
    if (!token.ok()) {
        return absl::UnauthenticatedError("bootstrap token unknown (" +
                                          std::string(token.status().message()) + ")");
    }
    const std::string secret_hash = pki::token_hash(token->secret);
    absl::StatusOr<store::BootstrapToken> stored = core.store.get_bootstrap_token(token->id);
    if (absl::IsNotFound(stored.status())) {
        return absl::UnauthenticatedError(std::string(stored.status().message()));
    }
    RETURN_IF_ERROR(stored.status());
    ASSIGN_OR_RETURN(bool matches, core.store.bootstrap_secret_matches(token->id, secret_hash));
    const int64_t now = wall_clock_ns();
    RETURN_IF_ERROR(store::check_bootstrap_token(*stored, matches, now));
    ASSIGN_OR_RETURN(pki::CheckedCsr csr, pki::parse_and_check_csr(req.csr_pem()));
    *name_out = csr.name;
    if (!stored->name_pattern.empty()) {
        absl::StatusOr<std::regex> re = compile_pattern(stored->name_pattern);
        if (!re.ok() || !std::regex_match(csr.name, *re)) {
            return absl::PermissionDeniedError(
                "sensor name '" + csr.name + "' does not match the name pattern '" +
                stored->name_pattern + "' of bootstrap token '" + token->id + "'");
        }
    }
    // Checked again by redeem, in the transaction that spends the use; this saves signing.
    if (auto s = core.store.get_sensor(csr.name); s.ok() && s->revoked) {
        return absl::PermissionDeniedError("sensor '" + csr.name +
                                           "' is revoked; readmit it first: picketctl sensor "
                                           "readmit " +
                                           csr.name);
    }
    ASSIGN_OR_RETURN(pki::SignedCert cert,
                     pki::sign_csr(*core.ca, req.csr_pem(), pki::CertKind::kSensor,
                                   core.options.enroll_validity));
    store::Redemption r;
    r.token_id = token->id;
    r.secret_hash = secret_hash;
    r.sensor = csr.name;
    r.cert_serial = cert.serial_hex;
    r.cert_sha256 = pki::token_hash(cert.cert_pem);
    r.not_after =
        std::chrono::duration_cast<std::chrono::nanoseconds>(cert.not_after.time_since_epoch())
            .count();
    r.ts = now;
    ASSIGN_OR_RETURN(store::BootstrapToken spent, core.store.redeem_bootstrap_token(r));
    resp->set_certificate_pem(cert.cert_pem);
    resp->set_ca_pem(core.ca->cert_pem);
    resp->mutable_labels()->insert(spent.labels.begin(), spent.labels.end());
    resp->set_not_after(r.not_after);
    resp->set_serial(cert.serial_hex);
    log::info("sensor " + csr.name + " enrolled with bootstrap token " + token->id +
              ": certificate " + cert.serial_hex + " (" + std::to_string(spent.used) + " of " +
              std::to_string(spent.uses) + " uses spent)");
    return absl::OkStatus();
}

absl::Status renew(Core& core, grpc::ServerContext* ctx, const pb::RenewCertificateRequest& req,
                   pb::RenewCertificateResponse* resp) {
    RETURN_IF_ERROR(enrollment_configured(core));
    const std::string presented = peer_cert(ctx);
    if (presented.empty()) {
        return absl::UnauthenticatedError(
            "RenewCertificate needs the sensor's current client certificate");
    }
    absl::StatusOr<std::string> name = pki::sensor_name_from_cert(presented);
    if (!name.ok()) {
        return absl::PermissionDeniedError("client certificate: " +
                                           std::string(name.status().message()));
    }
    ASSIGN_OR_RETURN(pki::CheckedCsr csr, pki::parse_and_check_csr(req.csr_pem()));
    if (csr.name != *name) {
        return absl::PermissionDeniedError("the CSR is for sensor '" + csr.name +
                                           "', the client certificate for '" + *name + "'");
    }
    ASSIGN_OR_RETURN(pki::SignedCert cert,
                     pki::sign_csr(*core.ca, req.csr_pem(), pki::CertKind::kSensor,
                                   core.options.enroll_validity));
    const int64_t not_after =
        std::chrono::duration_cast<std::chrono::nanoseconds>(cert.not_after.time_since_epoch())
            .count();
    RETURN_IF_ERROR(core.store.record_renewal(*name, pki::token_hash(presented), cert.serial_hex,
                                              pki::token_hash(cert.cert_pem), not_after,
                                              wall_clock_ns()));
    resp->set_certificate_pem(cert.cert_pem);
    resp->set_ca_pem(core.ca->cert_pem);
    resp->set_not_after(not_after);
    resp->set_serial(cert.serial_hex);
    log::info("sensor " + *name + " renewed its certificate: " + cert.serial_hex);
    return absl::OkStatus();
}

}  // namespace

grpc::Status SensorLinkService::Enroll(grpc::ServerContext* ctx, const pb::EnrollRequest* req,
                                       pb::EnrollResponse* resp) {
    std::string name;
    absl::Status st = enroll(core_, *req, resp, &name);
    if (!st.ok()) {
        log::warning("enrollment" + (name.empty() ? std::string() : " of sensor '" + name + "'") +
                     " from " + ctx->peer() + " refused: " + std::string(st.message()));
    }
    return to_grpc(st);
}

grpc::Status SensorLinkService::RenewCertificate(grpc::ServerContext* ctx,
                                                 const pb::RenewCertificateRequest* req,
                                                 pb::RenewCertificateResponse* resp) {
    absl::Status st = renew(core_, ctx, *req, resp);
    if (!st.ok()) {
        log::warning("certificate renewal from " + ctx->peer() +
                     " refused: " + std::string(st.message()));
    }
    return to_grpc(st);
}

grpc::Status FleetAdminService::CreateBootstrapToken(grpc::ServerContext* ctx,
                                                     const pb::CreateBootstrapTokenRequest* req,
                                                     pb::CreateBootstrapTokenResponse* resp) {
    return serve(ctx, [&]() -> absl::Status {
        const uint64_t ttl = req->ttl_seconds() == 0 ? kDefaultTokenTtlSeconds : req->ttl_seconds();
        if (ttl > kMaxTokenTtlSeconds) {
            return absl::InvalidArgumentError("bootstrap token ttl of " + std::to_string(ttl) +
                                              " seconds is longer than 365 days");
        }
        RETURN_IF_ERROR(compile_pattern(req->name_pattern()).status());
        const int64_t now = wall_clock_ns();
        store::NewBootstrapToken t;
        t.uses = req->uses() == 0 ? 1 : req->uses();
        t.expires_at = now + static_cast<int64_t>(ttl) * kNsPerSec;
        t.name_pattern = req->name_pattern();
        t.labels.insert(req->labels().begin(), req->labels().end());
        t.created_at = now;
        t.actor = "admin";
        absl::Status st;
        pki::BootstrapToken token;
        for (int attempt = 0; attempt < 3; ++attempt) {  // an id clash is 1 in 36^8
            ASSIGN_OR_RETURN(token, pki::generate_bootstrap_token());
            t.id = token.id;
            t.secret_hash = pki::token_hash(token.secret);
            st = core_.store.create_bootstrap_token(t);
            if (!absl::IsAlreadyExists(st)) {
                break;
            }
        }
        RETURN_IF_ERROR(st);
        ASSIGN_OR_RETURN(store::BootstrapToken stored, core_.store.get_bootstrap_token(t.id));
        resp->set_token(token.text());
        *resp->mutable_info() = token_proto(stored, now);
        log::info("bootstrap token " + t.id + " created (" + std::to_string(t.uses) + " uses)");
        return absl::OkStatus();
    });
}

grpc::Status FleetAdminService::ListBootstrapTokens(grpc::ServerContext* ctx,
                                                    const pb::ListBootstrapTokensRequest* req,
                                                    pb::ListBootstrapTokensResponse* resp) {
    return serve(ctx, [&]() -> absl::Status {
        // Listed by id; the token is "t:" + the previous page's last id (paging.h).
        ASSIGN_OR_RETURN(PageRequest page,
                         page_request(req->page_size(), kMaxPageSize, req->page_token(), "t",
                                      [](std::string_view id) {
                                          return pki::validate_bootstrap_token_id(id).ok();
                                      }));
        ASSIGN_OR_RETURN(std::vector<store::BootstrapToken> tokens,
                         core_.store.list_bootstrap_tokens());
        std::sort(tokens.begin(), tokens.end(),
                  [](const store::BootstrapToken& a, const store::BootstrapToken& b) {
                      return a.id < b.id;
                  });
        const int64_t now = wall_clock_ns();
        resp->set_next_page_token(forward_page(
            tokens, page, "t",
            [](const store::BootstrapToken& t) -> const std::string& { return t.id; },
            [&](const store::BootstrapToken& t) { *resp->add_tokens() = token_proto(t, now); }));
        return absl::OkStatus();
    });
}

grpc::Status FleetAdminService::RevokeBootstrapToken(grpc::ServerContext* ctx,
                                                     const pb::RevokeBootstrapTokenRequest* req,
                                                     pb::RevokeBootstrapTokenResponse* resp) {
    return serve(ctx, [&]() -> absl::Status {
        RETURN_IF_ERROR(pki::validate_bootstrap_token_id(req->id()));
        ASSIGN_OR_RETURN(bool now,
                         core_.store.revoke_bootstrap_token(req->id(), wall_clock_ns(), "admin"));
        ASSIGN_OR_RETURN(store::BootstrapToken t, core_.store.get_bootstrap_token(req->id()));
        resp->set_revoked_now(now);
        *resp->mutable_info() = token_proto(t, wall_clock_ns());
        return absl::OkStatus();
    });
}

}  // namespace picket::manager::service
