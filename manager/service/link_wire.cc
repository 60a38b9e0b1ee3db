// SensorLink's wire pieces built by hand (sensor_link.cc sends them): an ApplyBundle around a
// bundle serialized once per deployment.
#include <algorithm>
#include <string>

#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/wire_format_lite.h"
#include "manager/service/internal.h"

namespace picket::manager::service {

grpc::ByteBuffer apply_bundle_message(std::string_view deployment_id,
                                      const grpc::Slice& bundle_bytes) {
    using google::protobuf::internal::WireFormatLite;
    using google::protobuf::io::CodedOutputStream;
    const uint32_t outer_tag =
        WireFormatLite::MakeTag(picket::v1::ManagerMessage::kApplyBundleFieldNumber,
                                WireFormatLite::WIRETYPE_LENGTH_DELIMITED);
    const uint32_t id_tag =
        WireFormatLite::MakeTag(picket::v1::ApplyBundle::kDeploymentIdFieldNumber,
                                WireFormatLite::WIRETYPE_LENGTH_DELIMITED);
    const uint32_t bundle_tag = WireFormatLite::MakeTag(picket::v1::ApplyBundle::kBundleFieldNumber,
                                                        WireFormatLite::WIRETYPE_LENGTH_DELIMITED);
    const size_t id_size = deployment_id.size();
    const size_t bundle_size = bundle_bytes.size();
    // ApplyBundle: deployment_id (field 1; proto3 leaves an empty one out), then bundle
    // (field 2), as protobuf writes them.
    const size_t id_field = id_size == 0 ? 0
                                         : CodedOutputStream::VarintSize32(id_tag) +
                                               CodedOutputStream::VarintSize64(id_size) + id_size;
    const size_t inner_size = id_field + CodedOutputStream::VarintSize32(bundle_tag) +
                              CodedOutputStream::VarintSize64(bundle_size) + bundle_size;
    std::string header;
    header.resize(CodedOutputStream::VarintSize32(outer_tag) +
                  CodedOutputStream::VarintSize64(inner_size) + inner_size - bundle_size);
    auto* p = reinterpret_cast<uint8_t*>(header.data());
    p = CodedOutputStream::WriteVarint32ToArray(outer_tag, p);
    p = CodedOutputStream::WriteVarint64ToArray(inner_size, p);
    if (id_size != 0) {
        p = CodedOutputStream::WriteVarint32ToArray(id_tag, p);
        p = CodedOutputStream::WriteVarint64ToArray(id_size, p);
        p = std::copy(deployment_id.begin(), deployment_id.end(), p);
    }
    p = CodedOutputStream::WriteVarint32ToArray(bundle_tag, p);
    CodedOutputStream::WriteVarint64ToArray(bundle_size, p);
    const grpc::Slice slices[2] = {grpc::Slice(header), bundle_bytes};
    return grpc::ByteBuffer(slices, 2);
}

}  // namespace picket::manager::service
