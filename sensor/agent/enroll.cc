// Bootstrap enrollment and renewal of the sensor's own certificate (docs/fleet.md "Enrolling
// sensors"). The key is generated here and never leaves the state directory; the manager sees
// only CSRs. The identity lives in STATE/tls, a symlink to a directory holding sensor.key
// (0600) and sensor.crt: a renewal writes a new directory and swaps the link with rename(2),
// so a reader sees the old pair or the new one, never a key with the other's certificate.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "common/log.h"
#include "common/pki/pki.h"
#include "picket/v1/picket.grpc.pb.h"
#include "sensor/agent/agent.h"

namespace picket::sensor::agent {

namespace fs = std::filesystem;
namespace v1 = picket::v1;

namespace {

constexpr std::chrono::seconds kEnrollRpcTimeout{30};

absl::Status write_file(const fs::path& path, const std::string& data, mode_t mode) {
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
    if (fd < 0) {
        return absl::ErrnoToStatus(errno, path.string() + ": cannot create");
    }
    absl::Status st = absl::OkStatus();
    if (::fchmod(fd, mode) != 0) {  // whatever the umask
        st = absl::ErrnoToStatus(errno, path.string() + ": chmod");
    }
    size_t done = 0;
    while (st.ok() && done < data.size()) {
        ssize_t n = ::write(fd, data.data() + done, data.size() - done);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0) {
            st = absl::ErrnoToStatus(errno, path.string() + ": write");
        } else {
            done += static_cast<size_t>(n);
        }
    }
    if (st.ok() && ::fsync(fd) != 0) {
        st = absl::ErrnoToStatus(errno, path.string() + ": fsync");
    }
    ::close(fd);
    return st;
}

absl::StatusOr<std::string> read_text(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        return absl::NotFoundError("cannot read " + path.string());
    }
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

// The --manager entries in the order this sensor tries them (walk_order: its first choice,
// then the next ones): replicas share one database and CA, so any of them enrolls or renews.
// A DNS name with several addresses is one entry here: gRPC tries each of its addresses.
std::vector<std::string> manager_order(const AgentOptions& o) {
    std::vector<std::string> entries =
        parse_manager_list(o.manager).value_or(std::vector<std::string>{o.manager});
    std::vector<std::string> out;
    for (size_t i : walk_order(o.name, entries.size())) {
        out.push_back(entries[i]);
    }
    return out;
}

std::shared_ptr<grpc::Channel> make_channel(const std::string& target,
                                            const grpc::SslCredentialsOptions& ssl) {
    grpc::ChannelArguments args;
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    return grpc::CreateCustomChannel(target, grpc::SslCredentials(ssl), args);
}

bool retryable(absl::StatusCode code) {
    return code == absl::StatusCode::kUnavailable || code == absl::StatusCode::kDeadlineExceeded;
}

absl::Status from_grpc(const grpc::Status& s) {
    return absl::Status(static_cast<absl::StatusCode>(s.error_code()), s.error_message());
}

}  // namespace

IdentityFiles identity_files(const fs::path& state_dir) {
    return {state_dir / "tls" / "sensor.crt", state_dir / "tls" / "sensor.key"};
}

absl::Status install_identity(const fs::path& state_dir, const std::string& key_pem,
                              const std::string& cert_pem) {
    std::error_code ec;
    fs::path dir;
    std::random_device rd;
    for (int attempt = 0;; ++attempt) {
        char suffix[17];
        std::snprintf(suffix, sizeof(suffix), "%08x%08x", rd(), rd());
        dir = state_dir / ("tls." + std::string(suffix));
        if (::mkdir(dir.c_str(), 0700) == 0) {
            break;
        }
        if (errno != EEXIST || attempt > 3) {
            return absl::ErrnoToStatus(errno, dir.string() + ": cannot create directory");
        }
    }
    const IdentityFiles in_dir{dir / "sensor.crt", dir / "sensor.key"};
    absl::Status st = write_file(in_dir.key, key_pem, 0600);
    if (st.ok()) {
        st = write_file(in_dir.cert, cert_pem, 0644);
    }
    const fs::path link = state_dir / "tls";
    const fs::path tmp_link = state_dir / ".tls.new";
    fs::path old_target;
    if (fs::is_symlink(link, ec)) {
        old_target = fs::read_symlink(link, ec);
    }
    if (st.ok()) {
        fs::remove(tmp_link, ec);
        if (::symlink(dir.filename().c_str(), tmp_link.c_str()) != 0) {
            st = absl::ErrnoToStatus(errno, tmp_link.string() + ": symlink");
        } else if (::rename(tmp_link.c_str(), link.c_str()) != 0) {
            st = absl::ErrnoToStatus(errno, link.string() + ": rename");
        }
    }
    if (!st.ok()) {
        fs::remove_all(dir, ec);
        fs::remove(tmp_link, ec);
        return st;
    }
    if (int dfd = ::open(state_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); dfd >= 0) {
        ::fsync(dfd);
        ::close(dfd);
    }
    if (!old_target.empty() && old_target != dir.filename()) {
        fs::remove_all(state_dir / old_target, ec);  // the previous key goes with it
    }
    return absl::OkStatus();
}

absl::StatusOr<v1::EnrollResponse> enroll_once(const AgentOptions& o, const std::string& target) {
    absl::StatusOr<pki::BootstrapToken> token = pki::parse_bootstrap_token(o.bootstrap_token);
    if (!token.ok()) {
        return absl::InvalidArgumentError("--bootstrap-token-file: " +
                                          std::string(token.status().message()));
    }
    absl::StatusOr<std::string> ca = read_text(o.ca);
    if (!ca.ok()) {
        return ca.status();
    }
    absl::StatusOr<pki::KeyAndCsr> made = pki::make_csr(o.name);
    if (!made.ok()) {
        return made.status();
    }
    grpc::SslCredentialsOptions ssl;
    ssl.pem_root_certs = *ca;  // the sensor authenticates the manager; it has no cert yet
    auto stub = v1::SensorLink::NewStub(make_channel(target, ssl));
    v1::EnrollRequest req;
    req.set_token(token->text());
    req.set_csr_pem(made->csr_pem);
    v1::EnrollResponse resp;
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + kEnrollRpcTimeout);
    if (grpc::Status s = stub->Enroll(&ctx, req, &resp); !s.ok()) {
        return from_grpc(s);
    }
    absl::StatusOr<pki::CertInfo> info = pki::cert_info(resp.certificate_pem());
    if (!info.ok()) {
        return absl::InternalError("the manager's certificate does not parse: " +
                                   std::string(info.status().message()));
    }
    if (info->common_name != o.name) {
        return absl::InternalError("the manager issued a certificate for '" + info->common_name +
                                   "', not '" + o.name + "'");
    }
    if (absl::Status st = install_identity(o.state_dir, made->key_pem, resp.certificate_pem());
        !st.ok()) {
        return st;
    }
    return resp;
}

absl::Status ensure_identity(AgentOptions& o) {
    const IdentityFiles files = identity_files(o.state_dir);
    std::error_code ec;
    if (fs::exists(files.cert, ec) && fs::exists(files.key, ec)) {
        absl::StatusOr<std::string> pem = read_text(files.cert);
        absl::StatusOr<pki::CertInfo> info =
            pem.ok() ? pki::cert_info(*pem) : absl::StatusOr<pki::CertInfo>(pem.status());
        if (!info.ok()) {
            return absl::FailedPreconditionError(files.cert.string() + ": " +
                                                 std::string(info.status().message()));
        }
        if (info->common_name != o.name) {
            // One node's state directory must not make it another sensor.
            return absl::FailedPreconditionError(
                files.cert.string() + " is the certificate of sensor '" + info->common_name +
                "', not of --name '" + o.name + "' (use another --state-dir)");
        }
        o.tls_cert = files.cert.string();
        o.tls_key = files.key.string();
        log::info("agent: using the enrolled identity in " + (o.state_dir / "tls").string() +
                  " (certificate " + info->serial_hex + ")");
        return absl::OkStatus();
    }
    uint32_t attempt = 0;
    std::mt19937_64 rng(std::random_device{}());
    std::uniform_real_distribution<double> unit(0.0, 1.0);
    const std::vector<std::string> order = manager_order(o);
    for (size_t next = 0;; next = (next + 1) % order.size()) {
        const std::string& target = order[next];
        absl::StatusOr<v1::EnrollResponse> resp = enroll_once(o, target);
        if (resp.ok()) {
            std::string labels;
            for (const auto& [k, v] : resp->labels()) {
                labels += (labels.empty() ? "" : ",") + k + "=" + v;
            }
            log::info("agent: enrolled as '" + o.name + "' with bootstrap token: certificate " +
                      resp->serial() + (labels.empty() ? "" : ", labels " + labels));
            o.tls_cert = files.cert.string();
            o.tls_key = files.key.string();
            return absl::OkStatus();
        }
        const absl::StatusCode code = resp.status().code();
        if (!retryable(code)) {
            return absl::Status(code, "enrollment refused: " + absl::StatusCodeToString(code) +
                                          ": " + std::string(resp.status().message()));
        }
        if (next + 1 < order.size()) {
            // Another replica at once; the backoff once every address has been tried.
            log::warning("agent: enrollment: manager " + target + " unavailable: " +
                         std::string(resp.status().message()) + "; trying " + order[next + 1]);
            continue;
        }
        const auto delay = backoff_delay(o.backoff, attempt, unit(rng));
        attempt = std::min<uint32_t>(attempt + 1, 32);
        log::warning("agent: enrollment: manager " + target +
                     " unavailable: " + std::string(resp.status().message()) + "; retrying in " +
                     std::to_string(delay.count()) + " ms");
        std::this_thread::sleep_for(delay);
    }
}

absl::StatusOr<std::chrono::system_clock::time_point> renewal_time(const AgentOptions& o) {
    absl::StatusOr<std::string> pem = read_text(o.tls_cert);
    if (!pem.ok()) {
        return pem.status();
    }
    absl::StatusOr<pki::CertInfo> info = pki::cert_info(*pem);
    if (!info.ok()) {
        return info.status();
    }
    return info->not_after - (info->not_after - info->not_before) / 3;
}

absl::Status renew_identity(const AgentOptions& o) {
    absl::StatusOr<pki::TlsCredentials> creds =
        pki::load_credentials(o.tls_cert, o.tls_key, o.ca, pki::Purpose::kClient);
    if (!creds.ok()) {
        return creds.status();
    }
    absl::StatusOr<pki::KeyAndCsr> made = pki::make_csr(o.name);
    if (!made.ok()) {
        return made.status();
    }
    grpc::SslCredentialsOptions ssl;
    ssl.pem_root_certs = creds->ca_pem;
    ssl.pem_private_key = creds->key_pem;
    ssl.pem_cert_chain = creds->cert_pem;
    v1::RenewCertificateRequest req;
    req.set_csr_pem(made->csr_pem);
    v1::RenewCertificateResponse resp;
    absl::Status last;
    for (const std::string& target : manager_order(o)) {  // the first replica that answers
        auto stub = v1::SensorLink::NewStub(make_channel(target, ssl));
        grpc::ClientContext ctx;
        ctx.set_deadline(std::chrono::system_clock::now() + kEnrollRpcTimeout);
        last = from_grpc(stub->RenewCertificate(&ctx, req, &resp));
        if (!retryable(last.code())) {
            break;
        }
        log::warning("agent: certificate renewal: manager " + target +
                     " unavailable: " + std::string(last.message()));
    }
    if (!last.ok()) {
        return last;
    }
    absl::StatusOr<pki::CertInfo> info = pki::cert_info(resp.certificate_pem());
    if (!info.ok() || info->common_name != o.name) {
        return absl::InternalError("the manager's renewed certificate is not for '" + o.name + "'");
    }
    if (absl::Status st = install_identity(o.state_dir, made->key_pem, resp.certificate_pem());
        !st.ok()) {
        return st;
    }
    log::info("agent: certificate renewed: " + resp.serial());
    return absl::OkStatus();
}

}  // namespace picket::sensor::agent
