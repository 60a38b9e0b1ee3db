// Channel set-up for picketctl: loopback check for --insecure, TLS credentials, status text.
#include "manager/cli/picketctl.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#include "common/bundle/bundle.h"
#include "common/pki/pki.h"
#include "manager/loopback.h"

namespace picket::manager::cli {

namespace {

bool starts_with(std::string_view s, std::string_view prefix) {
    return s.substr(0, prefix.size()) == prefix;
}

absl::StatusOr<std::string> read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        return absl::NotFoundError(path + ": cannot open");
    }
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

}  // namespace

bool is_loopback_target(std::string_view target) {
    if (starts_with(target, "unix:") || starts_with(target, "unix-abstract:")) {
        return true;
    }
    if (starts_with(target, "dns:///")) {
        target.remove_prefix(7);
    } else if (starts_with(target, "ipv4:") || starts_with(target, "ipv6:")) {
        target.remove_prefix(5);
        // ipv4:a:p,b:p lists several addresses: every one must be loopback.
        size_t comma = target.find(',');
        if (comma != std::string_view::npos) {
            return is_loopback_target(std::string("ipv4:").append(target.substr(0, comma))) &&
                   is_loopback_target(std::string("ipv4:").append(target.substr(comma + 1)));
        }
    }
    std::string_view host;
    if (starts_with(target, "[")) {
        size_t close = target.find(']');
        if (close == std::string_view::npos) {
            return false;
        }
        host = target.substr(1, close - 1);
    } else if (std::count(target.begin(), target.end(), ':') > 1) {
        host = target;  // bare IPv6 literal without port
    } else {
        host = target.substr(0, target.find(':'));
    }
    return !host.empty() && is_loopback_host(host, /*lenient=*/true);
}

absl::StatusOr<std::shared_ptr<grpc::Channel>> make_channel(const ConnectOptions& options) {
    if (options.manager.empty()) {
        return absl::InvalidArgumentError("--manager ADDR is required for this command");
    }
    grpc::ChannelArguments args;
    // The bundle limit plus its envelope, as on the manager (common/bundle kMaxMessageBytes).
    args.SetMaxReceiveMessageSize(::picket::bundle::kMaxMessageBytes);
    args.SetMaxSendMessageSize(::picket::bundle::kMaxMessageBytes);
    if (options.insecure) {
        if (!is_loopback_target(options.manager)) {
            return absl::InvalidArgumentError(
                "--insecure refused: manager address '" + options.manager +
                "' is not loopback (127.0.0.0/8, ::1, localhost); use TLS (--ca)");
        }
        return grpc::CreateCustomChannel(options.manager, grpc::InsecureChannelCredentials(), args);
    }
    if (options.ca_file.empty()) {
        return absl::InvalidArgumentError(
            "TLS needs --ca FILE (the fleet CA), or --insecure for a loopback manager");
    }
    if (options.cert_file.empty() != options.key_file.empty()) {
        return absl::InvalidArgumentError("--cert and --key go together");
    }
    grpc::SslCredentialsOptions ssl;
    if (!options.cert_file.empty()) {
        absl::StatusOr<pki::TlsCredentials> creds = pki::load_credentials(
            options.cert_file, options.key_file, options.ca_file, pki::Purpose::kClient);
        if (!creds.ok()) {
            return creds.status();
        }
        ssl.pem_root_certs = creds->ca_pem;
        ssl.pem_cert_chain = creds->cert_pem;
        ssl.pem_private_key = creds->key_pem;
    } else {
        absl::StatusOr<std::string> ca = read_file(options.ca_file);
        if (!ca.ok()) {
            return ca.status();
        }
        ssl.pem_root_certs = *ca;
    }
    return grpc::CreateCustomChannel(options.manager, grpc::SslCredentials(ssl), args);
}

absl::Status to_absl(const grpc::Status& status) {
    if (status.ok()) {
        return absl::OkStatus();
    }
    return absl::Status(static_cast<absl::StatusCode>(status.error_code()), status.error_message());
}

std::string status_text(const absl::Status& status) {
    return absl::StatusCodeToString(status.code()) + ": " + std::string(status.message());
}

}  // namespace picket::manager::cli
