#include "sensor/inspect/inspect.h"

#include <iterator>

namespace picket::sensor::inspect {

const char* app_proto_name(AppProto p) {
    switch (p) {
        case AppProto::kUnknown:
            return "unknown";
        case AppProto::kHttp:
            return "http";
        case AppProto::kDns:
            return "dns";
        case AppProto::kTls:
            return "tls";
        case AppProto::kSmtp:
            return "smtp";
        case AppProto::kFtp:
            return "ftp";
        case AppProto::kSmb:
            return "smb";
        case AppProto::kSsh:
            return "ssh";
        case AppProto::kDcerpc:
            return "dcerpc";
        case AppProto::kFtpData:
            return "ftp-data";
    }
    return "unknown";
}

namespace {

using P = AppProto;

// Suricata's names (rules/{http,dns,tls,ssh,ftp}-events.rules) on Picket's parser events. Picket's
// HTTP events do not say the direction: a request and a response name share one event, and
// the rule's flow direction (or the view's) tells them apart. Suricata names Picket's parsers
// never raise are not listed: a rule naming one is refused, not silently dead.
constexpr AppEventName kAppEvents[] = {
    {P::kHttp, "http.request_field_too_long", 2, "line_too_long"},
    {P::kHttp, "http.response_field_too_long", 2, "line_too_long"},
    {P::kHttp, "http.request_too_many_headers", 1, "header_too_long"},
    {P::kHttp, "http.response_too_many_headers", 1, "header_too_long"},
    {P::kHttp, "http.invalid_request_chunk_len", 3, "invalid_chunk_size"},
    {P::kHttp, "http.invalid_response_chunk_len", 3, "invalid_chunk_size"},
    {P::kHttp, "http.invalid_content_length_field_in_request", 5, "invalid_content_length"},
    {P::kHttp, "http.invalid_content_length_field_in_response", 5, "invalid_content_length"},
    {P::kHttp, "http.compression_bomb", 6, "decompression_bomb"},
    {P::kHttp, "http.gzip_decompression_failed", 7, "decompression_error"},
    {P::kHttp, "http.request_line_invalid", 8, "invalid_request_line"},
    {P::kHttp, "http.response_invalid_status", 9, "invalid_status_line"},
    {P::kHttp, "http.double_encoded_uri", 11, "double_encoding"},
    {P::kHttp, "http.request_field_missing_colon", 21, "missing_colon"},
    {P::kHttp, "http.response_field_missing_colon", 21, "missing_colon"},
    {P::kHttp, "http.request_header_invalid", 22, "invalid_header_name"},
    {P::kHttp, "http.response_header_invalid", 22, "invalid_header_name"},
    {P::kHttp, "http.missing_host_header", 23, "missing_host"},
    {P::kHttp, "http.unable_to_match_response_to_request", 25, "unmatched_response"},
    {P::kHttp, "http.invalid_transfer_encoding_value_in_request", 26,
     "invalid_transfer_encoding_value_in_request"},
    {P::kHttp, "http.multipart_generic_error", 27, "multipart_generic_error"},
    {P::kHttp, "http.multipart_invalid_header", 28, "multipart_invalid_header"},
    {P::kHttp, "http.multipart_no_filedata", 29, "multipart_no_filedata"},
    {P::kDns, "dns.malformed_data", 0, "malformed_data"},
    {P::kDns, "dns.name_too_long", 2, "name_too_long"},
    {P::kDns, "dns.infinite_loop", 4, "compression_loop"},
    {P::kDns, "dns.not_request", 6, "not_a_request"},
    {P::kDns, "dns.not_a_request", 6, "not_a_request"},
    {P::kDns, "dns.not_response", 7, "not_a_response"},
    {P::kDns, "dns.not_a_response", 7, "not_a_response"},
    {P::kDns, "dns.z_flag_set", 8, "z_flag_set"},
    {P::kDns, "dns.invalid_opcode", 9, "invalid_opcode"},
    {P::kDns, "dns.flooded", 10, "flooded"},
    {P::kTls, "tls.invalid_record_type", 0, "invalid_record_type"},
    {P::kTls, "tls.invalid_record_version", 1, "invalid_record_version"},
    {P::kTls, "tls.invalid_record_length", 2, "invalid_record_length"},
    {P::kTls, "tls.invalid_handshake_message", 4, "invalid_handshake_message"},
    {P::kTls, "tls.handshake_invalid_length", 5, "handshake_too_long"},
    {P::kTls, "tls.certificate_invalid_length", 6, "certificate_too_long"},
    {P::kTls, "tls.invalid_certificate", 7, "invalid_certificate"},
    {P::kTls, "tls.multiple_sni_extensions", 9, "multiple_sni"},
    {P::kTls, "tls.invalid_sni_length", 10, "invalid_sni"},
    {P::kSsh, "ssh.invalid_banner", 0, "invalid_banner"},
    {P::kSsh, "ssh.long_banner", 1, "long_banner"},
    {P::kSsh, "ssh.invalid_record", 2, "invalid_record"},
    {P::kSsh, "ssh.long_kex_record", 3, "long_kex_record"},
    {P::kFtp, "ftp.request_command_too_long", 0, "request_command_too_long"},
    {P::kFtp, "ftp.response_command_too_long", 1, "response_command_too_long"},
};

}  // namespace

AppEventTable app_event_table() {
    return {kAppEvents, std::size(kAppEvents)};
}

const AppEventName* find_app_event(std::string_view name) {
    for (const AppEventName& e : kAppEvents) {
        if (name == e.name) {
            return &e;
        }
    }
    return nullptr;
}

}  // namespace picket::sensor::inspect
