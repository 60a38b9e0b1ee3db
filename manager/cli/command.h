// picketctl's commands, shared by the files that define them (picketctl.cc and the command
// groups in *_commands.cc): the global options, one Command per invocation (connect, call,
// print, exit codes) and how a leaf command is registered. Internal to picket_cli.
#pragma once

#include <chrono>
#include <fstream>
#include <functional>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>

#include <CLI/CLI.hpp>

#include "manager/cli/picketctl.h"
#include "manager/store/store.h"

namespace picket::manager::cli {

namespace v1 = picket::v1;
using nlohmann::json;
using Stub = v1::FleetAdmin::Stub;

inline constexpr std::chrono::seconds kRpcTimeout{60};

struct Globals {
    ConnectOptions conn;
    std::string token_file;
    bool json = false;
};

class Command {
public:
    Command(std::string name, Globals& g, std::ostream& out, std::ostream& err)
        : name_(std::move(name)), g_(g), out_(out), err_(err) {}

    int usage(std::string_view message) {
        err_ << "picketctl: " << name_ << ": " << message << "\n";
        return kExitUsage;
    }
    int usage(const absl::Status& status) { return usage(std::string(status.message())); }
    int fail(const absl::Status& status) {
        err_ << "picketctl: " << name_ << ": " << status_text(status) << "\n";
        return kExitFailed;
    }
    int fail(std::string_view message) {
        err_ << "picketctl: " << name_ << ": " << message << "\n";
        return kExitFailed;
    }

    // Opens the channel; a usage problem (missing --manager, --insecure off loopback) -> 2.
    std::optional<int> connect() {
        if (!g_.token_file.empty()) {
            std::ifstream in(g_.token_file);
            std::string token;
            std::getline(in, token);
            while (!token.empty() && isspace(static_cast<unsigned char>(token.back()))) {
                token.pop_back();
            }
            if (token.empty()) {
                return usage("--token-file " + g_.token_file + ": empty or unreadable");
            }
            g_.conn.token = token;
        }
        absl::StatusOr<std::shared_ptr<grpc::Channel>> channel = make_channel(g_.conn);
        if (!channel.ok()) {
            if (channel.status().code() == absl::StatusCode::kInvalidArgument) {
                return usage(channel.status());
            }
            return fail(channel.status());
        }
        stub_ = v1::FleetAdmin::NewStub(*channel);
        return std::nullopt;
    }

    template <typename Req, typename Resp>
    absl::Status call(grpc::Status (Stub::*method)(grpc::ClientContext*, const Req&, Resp*),
                      const Req& request, Resp* response) {
        grpc::ClientContext ctx;
        ctx.set_deadline(std::chrono::system_clock::now() + rpc_timeout_);
        if (!g_.conn.token.empty()) {
            ctx.AddMetadata("authorization", "Bearer " + g_.conn.token);
        }
        return to_absl(((*stub_).*method)(&ctx, request, response));
    }

    // WatchDeployment until the stream ends or `deadline`; `update` gets each message.
    absl::Status watch_deployment(const std::string& id,
                                  std::chrono::steady_clock::time_point deadline,
                                  const std::function<void(const v1::Deployment&)>& update) {
        grpc::ClientContext ctx;
        ctx.set_deadline(std::chrono::system_clock::now() +
                         (deadline - std::chrono::steady_clock::now()));
        if (!g_.conn.token.empty()) {
            ctx.AddMetadata("authorization", "Bearer " + g_.conn.token);
        }
        v1::WatchDeploymentRequest req;
        req.set_id(id);
        std::unique_ptr<grpc::ClientReader<v1::WatchDeploymentResponse>> reader =
            stub_->WatchDeployment(&ctx, req);
        v1::WatchDeploymentResponse resp;
        while (reader->Read(&resp)) {
            update(resp.deployment());
        }
        return to_absl(reader->Finish());
    }

    // The shape of most commands: connect, one RPC; `answer(response)` prints it and returns
    // the exit code. A connect or RPC failure returns its exit code instead.
    template <typename Req, typename Resp, typename Answer>
    int exchange(grpc::Status (Stub::*method)(grpc::ClientContext*, const Req&, Resp*),
                 const Req& request, Answer&& answer) {
        if (auto rc = connect()) {
            return *rc;
        }
        Resp response;
        if (absl::Status st = call(method, request, &response); !st.ok()) {
            return fail(st);
        }
        return answer(response);
    }

    // exchange() that prints the response as to_json(response) with --json, else as
    // to_text(response); exit 0.
    template <typename Req, typename Resp, typename ToJson, typename ToText>
    int show(grpc::Status (Stub::*method)(grpc::ClientContext*, const Req&, Resp*),
             const Req& request, ToJson&& to_json, ToText&& to_text) {
        return exchange(method, request, [&](const Resp& r) {
            json_output() ? print(to_json(r)) : print(to_text(r));
            return kExitOk;
        });
    }

    // Usage error (exit 2) for a sensor name the manager would refuse; with `optional`
    // (a --sensor filter) the empty name is fine.
    std::optional<int> check_sensor_name(const std::string& name, bool optional = false) {
        if (optional && name.empty()) {
            return std::nullopt;
        }
        if (absl::Status st = store::validate_sensor_name(name); !st.ok()) {
            return usage(st);
        }
        return std::nullopt;
    }

    void print(const json& doc) {
        out_ << doc.dump(2, ' ', false, json::error_handler_t::replace) << "\n";
    }
    void print(const std::string& text) { out_ << text; }
    bool json_output() const { return g_.json; }
    std::ostream& out() { return out_; }
    // A longer deadline for an RPC that does slow work on the manager (a rules update fetches).
    void set_rpc_timeout(std::chrono::seconds t) { rpc_timeout_ = t; }

private:
    std::string name_;
    Globals& g_;
    std::ostream& out_;
    std::ostream& err_;
    std::unique_ptr<Stub> stub_;
    std::chrono::seconds rpc_timeout_ = kRpcTimeout;
};

// Registers a leaf command: `fn` runs when `sub` is the command parsed.
using Leaf = std::function<void(CLI::App* sub, std::function<int()> fn)>;

// `enroll token create|list|revoke` (enroll_commands.cc).
void add_enroll_commands(CLI::App& app, Globals& g, std::ostream& out, std::ostream& err,
                         const Leaf& leaf);

}  // namespace picket::manager::cli
