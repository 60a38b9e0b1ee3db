// EveWriter: the stats event's rendering and the hand-off of every record to the sink.
#include "sensor/output/output.h"

namespace picket::sensor::output {

namespace {

std::unique_ptr<EveSink> regular_file(const std::string& path) {
    SinkOptions o;
    o.filetype = EveFiletype::kRegular;
    o.filename = path;
    return make_sink(o);
}

}  // namespace

EveWriter::EveWriter(const std::string& path) : sink_(regular_file(path)) {}

void EveWriter::write(const nlohmann::json& event) {
    sink_->write(event.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

}  // namespace picket::sensor::output
