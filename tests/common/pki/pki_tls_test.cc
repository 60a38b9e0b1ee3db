// Real mutual-TLS handshakes over loopback with certificates from the fleet CA: an in-process
// gRPC server configured like the manager (client certificate required and verified) and a
// generic method that answers with the identity the manager would derive from the peer.
#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include <grpcpp/generic/async_generic_service.h>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/security/server_credentials.h>
#include <gtest/gtest.h>

#include "common/pki/pki.h"
#include "tests/common/pki/pki_test_util.h"

namespace picket::pki {
namespace {

namespace fs = std::filesystem;

constexpr char kMethod[] = "/picket.test.Identity/Who";

// Answers "<kind>/<name>" from the verified client certificate, as the manager maps a
// connection to a sensor.
class IdentityReactor : public grpc::ServerGenericBidiReactor {
public:
    explicit IdentityReactor(grpc::GenericCallbackServerContext* ctx) {
        std::string reply = "no-certificate";
        std::vector<grpc::string_ref> pems =
            ctx->auth_context()->FindPropertyValues(GRPC_X509_PEM_CERT_PROPERTY_NAME);
        if (!pems.empty()) {
            auto id = peer_identity(std::string_view(pems[0].data(), pems[0].size()));
            reply = id.ok() ? id->kind + "/" + id->name : std::string(id.status().message());
        }
        grpc::Slice slice(reply);
        response_ = grpc::ByteBuffer(&slice, 1);
        StartRead(&request_);
    }
    void OnReadDone(bool ok) override {
        if (ok) {
            StartWriteAndFinish(&response_, grpc::WriteOptions(), grpc::Status::OK);
        } else {
            Finish(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "no request"));
        }
    }
    void OnDone() override { delete this; }

private:
    grpc::ByteBuffer request_;
    grpc::ByteBuffer response_;
};

class IdentityService : public grpc::CallbackGenericService {
public:
    grpc::ServerGenericBidiReactor* CreateReactor(
        grpc::GenericCallbackServerContext* ctx) override {
        return new IdentityReactor(ctx);
    }
};

struct CallResult {
    grpc::StatusCode code;
    std::string reply;
};

class PkiTlsTest : public ::testing::Test {
protected:
    void SetUp() override {
        ASSERT_TRUE(init_ca(fleet_.path(), "Fleet CA", 30).ok());
        ASSERT_TRUE(init_ca(other_.path(), "Other CA", 30).ok());
        ASSERT_TRUE(
            issue(fleet_.path(), CertKind::kManager, "manager", {"localhost", "127.0.0.1"}, 30)
                .ok());
        ASSERT_TRUE(issue(fleet_.path(), CertKind::kSensor, "sensor-1", {}, 30).ok());
        ASSERT_TRUE(issue(fleet_.path(), CertKind::kAdmin, "alice", {}, 30).ok());
        ASSERT_TRUE(issue(other_.path(), CertKind::kSensor, "sensor-1", {}, 30).ok());
        ASSERT_TRUE(
            issue(other_.path(), CertKind::kManager, "manager", {"localhost", "127.0.0.1"}, 30)
                .ok());

        auto creds = load_credentials(fleet_.path() / "manager.crt", fleet_.path() / "manager.key",
                                      fleet_.path() / "ca.crt", Purpose::kServer);
        ASSERT_TRUE(creds.ok()) << creds.status();
        grpc::SslServerCredentialsOptions opts(
            GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
        opts.pem_root_certs = creds->ca_pem;
        opts.pem_key_cert_pairs.push_back({creds->key_pem, creds->cert_pem});
        grpc::ServerBuilder builder;
        builder.AddListeningPort("127.0.0.1:0", grpc::SslServerCredentials(opts), &port_);
        builder.RegisterCallbackGenericService(&service_);
        server_ = builder.BuildAndStart();
        ASSERT_NE(server_, nullptr);
        ASSERT_GT(port_, 0);
    }
    void TearDown() override {
        if (server_) {
            server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
        }
    }

    // Connects with the client certificate `name` from `client_dir` (none when empty),
    // trusting the CA of `trust_dir`, and calls the identity method.
    CallResult call(const fs::path& client_dir, const std::string& name,
                    const fs::path& trust_dir) {
        grpc::SslCredentialsOptions opts;
        opts.pem_root_certs = test_util::read_file(trust_dir / "ca.crt");
        if (!name.empty()) {
            opts.pem_private_key = test_util::read_file(client_dir / (name + ".key"));
            opts.pem_cert_chain = test_util::read_file(client_dir / (name + ".crt"));
        }
        grpc::ChannelArguments args;
        args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
        auto channel = grpc::CreateCustomChannel("127.0.0.1:" + std::to_string(port_),
                                                 grpc::SslCredentials(opts), args);
        grpc::GenericStub stub(channel);
        grpc::ClientContext ctx;
        ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
        grpc::Slice req_slice(std::string("who"));
        grpc::ByteBuffer request(&req_slice, 1);
        grpc::ByteBuffer response;
        std::promise<grpc::Status> done;
        stub.UnaryCall(&ctx, kMethod, grpc::StubOptions(), &request, &response,
                       [&done](grpc::Status s) { done.set_value(std::move(s)); });
        grpc::Status status = done.get_future().get();
        CallResult out{status.error_code(), ""};
        std::vector<grpc::Slice> slices;
        if (status.ok() && response.Dump(&slices).ok()) {
            for (const grpc::Slice& s : slices) {
                out.reply.append(reinterpret_cast<const char*>(s.begin()), s.size());
            }
        }
        return out;
    }

    test_util::TempDir fleet_;
    test_util::TempDir other_;
    IdentityService service_;
    std::unique_ptr<grpc::Server> server_;
    int port_ = 0;
};

TEST_F(PkiTlsTest, SensorCertificateFromFleetCaConnects) {
    CallResult r = call(fleet_.path(), "sensor-1", fleet_.path());
    EXPECT_EQ(r.code, grpc::StatusCode::OK);
    EXPECT_EQ(r.reply, "sensor/sensor-1");
}

TEST_F(PkiTlsTest, AdminCertificateIsTaggedAsAdmin) {
    CallResult r = call(fleet_.path(), "alice", fleet_.path());
    EXPECT_EQ(r.code, grpc::StatusCode::OK);
    EXPECT_EQ(r.reply, "admin/alice");
}

TEST_F(PkiTlsTest, ChannelBecomesReadyWithFleetCertificates) {
    grpc::SslCredentialsOptions opts;
    opts.pem_root_certs = test_util::read_file(fleet_.path() / "ca.crt");
    opts.pem_private_key = test_util::read_file(fleet_.path() / "sensor-1.key");
    opts.pem_cert_chain = test_util::read_file(fleet_.path() / "sensor-1.crt");
    auto channel =
        grpc::CreateChannel("127.0.0.1:" + std::to_string(port_), grpc::SslCredentials(opts));
    EXPECT_TRUE(
        channel->WaitForConnected(std::chrono::system_clock::now() + std::chrono::seconds(5)));
}

TEST_F(PkiTlsTest, ClientCertificateFromAnotherCaIsRefused) {
    CallResult r = call(other_.path(), "sensor-1", fleet_.path());
    EXPECT_EQ(r.code, grpc::StatusCode::UNAVAILABLE);
    EXPECT_EQ(r.reply, "");
}

TEST_F(PkiTlsTest, ClientWithoutCertificateIsRefused) {
    CallResult r = call(fleet_.path(), "", fleet_.path());
    EXPECT_EQ(r.code, grpc::StatusCode::UNAVAILABLE);
}

TEST_F(PkiTlsTest, ManagerCertificateCannotBeUsedAsClient) {
    CallResult r = call(fleet_.path(), "manager", fleet_.path());
    EXPECT_EQ(r.code, grpc::StatusCode::UNAVAILABLE);
}

TEST_F(PkiTlsTest, SensorRefusesManagerTrustedByAnotherCa) {
    // The sensor trusts only the other CA, so the fleet manager's certificate is refused.
    CallResult r = call(other_.path(), "sensor-1", other_.path());
    EXPECT_EQ(r.code, grpc::StatusCode::UNAVAILABLE);
}

}  // namespace
}  // namespace picket::pki
