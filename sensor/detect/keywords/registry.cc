// The keyword registry: every supported rule keyword by name, in one greppable list (no
// static-initialiser registration). Sticky buffers and content modifiers are not keywords:
// they live in the buffer table (buffers.cc). Keywords Suricata knows but Picket does not
// support are listed in parser.cc so that they get a distinct diagnostic.
#include <span>
#include <string_view>

#include "sensor/detect/keywords/keywords.h"
#include "sensor/detect/keywords_list.h"
#include "sensor/detect/rule.h"

namespace picket::sensor::detect {
namespace {

using namespace keywords;

constexpr KeywordDef kKeywords[] = {
    // Meta (meta.cc).
    {"msg", parse_msg},
    {"sid", parse_sid},
    {"rev", parse_rev},
    {"gid", parse_gid},
    {"classtype", parse_classtype},
    {"priority", parse_priority},
    {"reference", parse_reference},
    {"metadata", parse_metadata},
    {"target", parse_target},
    // Payload.
    {"content", parse_content},
    {"uricontent", parse_uricontent},
    {"nocase", parse_nocase},
    {"offset", parse_offset},
    {"depth", parse_depth},
    {"distance", parse_distance},
    {"within", parse_within},
    {"startswith", parse_startswith},
    {"endswith", parse_endswith},
    {"fast_pattern", parse_fast_pattern},
    {"rawbytes", parse_rawbytes},
    {"pcre", parse_pcre},
    {"byte_test", parse_byte_test},
    {"byte_jump", parse_byte_jump},
    {"byte_extract", parse_byte_extract},
    {"byte_math", parse_byte_math},
    {"isdataat", parse_isdataat},
    {"bsize", parse_bsize},
    {"dsize", parse_dsize},
    {"base64_decode", parse_base64_decode},
    {"base64_data", parse_base64_data},
    {"asn1", parse_asn1},
    // Header and flow.
    {"flow", parse_flow},
    {"flowbits", parse_flowbits},
    {"xbits", parse_xbits},
    {"flowint", parse_flowint},
    {"flowvar", parse_flowvar},
    {"pktvar", parse_pktvar},
    {"hostbits", parse_hostbits},
    {"stream_size", parse_stream_size},
    {"tag", parse_tag},
    {"noalert", parse_noalert},
    {"flags", parse_flags},
    {"tcp.flags", parse_flags},  // Suricata 7's canonical name; flags is its alias
    {"ttl", parse_ttl},
    {"tos", parse_tos},
    {"id", parse_id},
    {"ip_proto", parse_ip_proto},
    {"sameip", parse_sameip},
    {"fragbits", parse_fragbits},
    {"seq", parse_seq},
    {"tcp.seq", parse_seq},
    {"ack", parse_ack},
    {"tcp.ack", parse_ack},
    {"window", parse_window},
    {"itype", parse_itype},
    {"icode", parse_icode},
    {"icmp_id", parse_icmp_id},
    {"icmp_seq", parse_icmp_seq},
    {"threshold", parse_threshold},
    {"detection_filter", parse_detection_filter},
    // Transforms (transform.cc) and app-layer header keywords (app_keywords.cc).
    {"dotprefix", parse_dotprefix},
    {"to_lowercase", parse_to_lowercase},
    {"to_uppercase", parse_to_uppercase},
    {"strip_whitespace", parse_strip_whitespace},
    {"compress_whitespace", parse_compress_whitespace},
    {"url_decode", parse_url_decode},
    {"urilen", parse_urilen},
    {"tls.version", parse_tls_version},
    {"dns.opcode", parse_dns_opcode},
    // SSH banner values (app_keywords.cc) and parser events (app_layer_event.cc).
    {"ssh.protoversion", parse_ssh_protoversion},
    {"ssh.softwareversion", parse_ssh_softwareversion},
    {"app-layer-event", parse_app_layer_event},
    {"app-layer-protocol", parse_app_layer_protocol},  // app_layer_protocol.cc
    // SIP start line (sip.cc).
    {"sip_method", parse_sip_method},
    {"sip_stat_code", parse_sip_stat_code},
    // FTP (ftpbounce.cc, ftpdata_command.cc).
    {"ftpbounce", parse_ftpbounce},
    {"ftpdata_command", parse_ftpdata_command},
};

}  // namespace

const KeywordDef* find_keyword(std::string_view name) {
    for (const KeywordDef& k : kKeywords) {
        if (name == k.name) {
            return &k;
        }
    }
    return nullptr;
}

// Read-only view of the registry for list_keywords() (--list-keywords).
std::span<const KeywordDef> keyword_table() {
    return kKeywords;
}

}  // namespace picket::sensor::detect
