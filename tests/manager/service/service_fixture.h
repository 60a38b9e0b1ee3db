// Test-only fixtures for the manager service tests (service_test, service_security_test): a
// polling wait, a temporary directory, the options of a TLS manager, a base fixture that runs a
// manager over a fresh store, and a fake sensor, a SensorLink
// client that sends its Hello, records what the manager sends and can answer ApplyBundle the way a
// sensor does.
#pragma once

#include <stdlib.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "manager/service/service.h"
#include "manager/store/store.h"
#include "picket/v1/picket.grpc.pb.h"
#include "tests/support/temp_dir.h"
#include "tests/support/wait.h"

namespace picket::manager::service::testing {

// Polls pred every 20 ms until it holds or limit passes; the last answer of pred.
inline bool wait_for(const std::function<bool()>& pred,
                     std::chrono::milliseconds limit = std::chrono::seconds(10)) {
    return static_cast<bool>(
        picket::testing::wait_until(pred, limit, "the condition", std::chrono::milliseconds(20)));
}

using picket::testing::TempDir;

inline std::string read_file(const std::string& path) {
    std::ifstream in(path);
    return std::string(std::istreambuf_iterator<char>(in), {});
}

// A manager on 127.0.0.1 (port 0) with TLS, serving the certificates that pki::init_ca and
// pki::issue(kManager, "manager") wrote to dir and asking sensors for a certificate of that CA;
// admin RPCs need the token "admin-secret".
inline ManagerOptions tls_options(const TempDir& dir) {
    ManagerOptions o;
    o.listen = "127.0.0.1:0";
    o.tls_cert_file = dir.file("manager.crt");
    o.tls_key_file = dir.file("manager.key");
    o.client_ca_file = dir.file("ca.crt");
    o.admin_token = "admin-secret";
    o.rollout_poll = std::chrono::milliseconds(50);
    return o;
}

// A manager over a fresh store (dir_/fleet.db). The subclass's SetUp prepares dir_ (PKI) and
// calls start() with its options; TearDown stops the manager before the store goes.
class ManagerTest : public ::testing::Test {
protected:
    explicit ManagerTest(const std::string& temp_prefix) : dir_(temp_prefix) {}

    void start(const ManagerOptions& o, picket::metrics::Registry* registry = nullptr) {
        auto s = store::Store::Open(dir_.file("fleet.db"));
        ASSERT_TRUE(s.ok()) << s.status();
        store_ = std::move(*s);
        auto srv = ManagerServer::start(o, *store_, registry);
        ASSERT_TRUE(srv.ok()) << srv.status();
        server_ = std::move(*srv);
    }
    void TearDown() override {
        server_->stop();
        server_.reset();
        store_.reset();
    }

    TempDir dir_;
    std::unique_ptr<store::Store> store_;
    std::unique_ptr<ManagerServer> server_;
};

// A sensor: sends Hello, records everything the manager sends, answers ApplyBundle (applied
// or rejected with `reject_error`) unless silent.
class FakeSensor {
public:
    FakeSensor(std::shared_ptr<grpc::Channel> channel, const picket::v1::Hello& h,
               std::string reject_error = {}, bool silent = false)
        : stub_(picket::v1::SensorLink::NewStub(channel)),
          reject_error_(std::move(reject_error)),
          silent_(silent) {
        stream_ = stub_->Connect(&ctx_);
        picket::v1::SensorMessage m;
        *m.mutable_hello() = h;
        send(m);
        reader_ = std::thread([this] { read_loop(); });
    }
    ~FakeSensor() { close(); }
    FakeSensor(const FakeSensor&) = delete;
    FakeSensor& operator=(const FakeSensor&) = delete;

    void close() {
        if (reader_.joinable()) {
            ctx_.TryCancel();
            reader_.join();
        }
    }

    void send(const picket::v1::SensorMessage& m) {
        std::lock_guard<std::mutex> lock(write_mu_);
        stream_->Write(m);
    }

    void send_metrics(uint64_t seq, int64_t ts, std::map<std::string, uint64_t> counters) {
        picket::v1::SensorMessage m;
        m.mutable_metrics()->set_seq(seq);
        m.mutable_metrics()->set_timestamp(ts);
        m.mutable_metrics()->mutable_counters()->insert(counters.begin(), counters.end());
        send(m);
    }

    std::vector<picket::v1::ManagerMessage> messages() {
        std::lock_guard<std::mutex> lock(mu_);
        return messages_;
    }
    std::vector<picket::v1::ApplyBundle> applies() {
        std::vector<picket::v1::ApplyBundle> out;
        for (const auto& m : messages()) {
            if (m.has_apply_bundle()) {
                out.push_back(m.apply_bundle());
            }
        }
        return out;
    }
    bool wait_applies(size_t n) {
        return wait_for([&] { return applies().size() >= n; });
    }
    // Waits for the first message to be an accepting Welcome.
    bool welcomed() {
        return wait_for([&] {
            std::lock_guard<std::mutex> lock(mu_);
            return !messages_.empty() && messages_[0].welcome().accepted();
        });
    }
    // Whether the stream has ended (does not wait).
    bool done() const { return done_; }
    // The stream's final status (waits for the end).
    grpc::Status final_status() {
        EXPECT_TRUE(wait_for([&] { return done_.load(); }));
        std::lock_guard<std::mutex> lock(mu_);
        return status_;
    }

private:
    void read_loop() {
        picket::v1::ManagerMessage m;
        while (stream_->Read(&m)) {
            {
                std::lock_guard<std::mutex> lock(mu_);
                messages_.push_back(m);
            }
            if (m.has_apply_bundle() && !silent_) {
                picket::v1::SensorMessage r;
                picket::v1::ApplyResult* a = r.mutable_apply_result();
                a->set_deployment_id(m.apply_bundle().deployment_id());
                a->set_version(m.apply_bundle().bundle().manifest().version());
                a->set_applied(reject_error_.empty());
                a->set_rules_loaded(1);
                if (!reject_error_.empty()) {
                    a->add_errors(reject_error_);
                }
                send(r);
            }
        }
        grpc::Status st = stream_->Finish();
        std::lock_guard<std::mutex> lock(mu_);
        status_ = st;
        done_ = true;
    }

    std::unique_ptr<picket::v1::SensorLink::Stub> stub_;
    grpc::ClientContext ctx_;
    std::unique_ptr<grpc::ClientReaderWriter<picket::v1::SensorMessage, picket::v1::ManagerMessage>>
        stream_;
    std::string reject_error_;
    bool silent_ = false;
    std::mutex write_mu_;
    std::mutex mu_;
    std::vector<picket::v1::ManagerMessage> messages_;
    grpc::Status status_;
    std::atomic<bool> done_{false};
    std::thread reader_;
};

}  // namespace picket::manager::service::testing
