// Test-only base fixture for the detection engine tests (detect_engine_test,
// detect_app_stream_test): writes a test's rules to a file, loads them with DetectEngine::load
// and gives the test one DetectWorker and a flow table whose freed flows release their
// flowbits, as a sensor worker does.
#pragma once

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <utility>

#include <gtest/gtest.h>

#include "sensor/decode/decode.h"
#include "sensor/detect/detect.h"
#include "sensor/flow/flow.h"

namespace picket::sensor::detect::testing {

class EngineTest : public ::testing::Test {
protected:
    // file_prefix names the rule file in the test's temporary directory.
    explicit EngineTest(std::string file_prefix) : file_prefix_(std::move(file_prefix)) {}

    void load(const std::string& rules, DetectConfig cfg = {}) {
        path_ =
            ::testing::TempDir() + "/" + file_prefix_ + "_" + std::to_string(getpid()) + ".rules";
        std::ofstream(path_) << rules;
        cfg.rule_files = {path_};
        engine_ = DetectEngine::load(cfg, nullptr, &summary_);
        flow_state_ = std::make_unique<WorkerFlowState>(engine_->flowbit_registry());
        worker_ = std::make_unique<DetectWorker>(engine_, flow_state_.get());
        flows_ = std::make_unique<flow::FlowTable>(flow::FlowConfig{});
        flows_->set_on_free([this](flow::Flow& f) { flow_state_->release_flow(f); });
    }
    void TearDown() override {
        if (flows_) {
            flows_->clear();
        }
        std::remove(path_.c_str());
    }

    std::string file_prefix_;
    std::string path_;
    LoadSummary summary_;
    std::shared_ptr<const DetectEngine> engine_;
    std::unique_ptr<WorkerFlowState> flow_state_;
    std::unique_ptr<DetectWorker> worker_;
    std::unique_ptr<flow::FlowTable> flows_;
    decode::DecodeContext dctx_{decode::DecodeOptions{decode::ChecksumMode::kNo}};
};

}  // namespace picket::sensor::detect::testing
