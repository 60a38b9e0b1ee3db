// Parse functions of every rule keyword, one file each under keywords/ (the file that parses a
// keyword also evaluates it). registry.cc lists them by name; nothing registers itself.
// Signature and conventions: see KeywordParseFn in sensor/detect/rule.h.
#pragma once

#include "sensor/detect/rule.h"

namespace picket::sensor::detect::keywords {

#define PICKET_KEYWORD(fn) \
    bool fn(ParseState& st, std::string_view value, bool has_value, std::string* error)

// Meta (meta.cc): msg sid rev gid classtype priority reference metadata target.
PICKET_KEYWORD(parse_msg);
PICKET_KEYWORD(parse_sid);
PICKET_KEYWORD(parse_rev);
PICKET_KEYWORD(parse_gid);
PICKET_KEYWORD(parse_classtype);
PICKET_KEYWORD(parse_priority);
PICKET_KEYWORD(parse_reference);
PICKET_KEYWORD(parse_metadata);
PICKET_KEYWORD(parse_target);

// Payload (one file each): content and its modifiers, pcre, byte_*, isdataat, bsize, dsize.
PICKET_KEYWORD(parse_content);
PICKET_KEYWORD(parse_uricontent);  // content on http.uri
PICKET_KEYWORD(parse_nocase);
PICKET_KEYWORD(parse_offset);
PICKET_KEYWORD(parse_depth);
PICKET_KEYWORD(parse_distance);
PICKET_KEYWORD(parse_within);
PICKET_KEYWORD(parse_startswith);
PICKET_KEYWORD(parse_endswith);
PICKET_KEYWORD(parse_fast_pattern);
PICKET_KEYWORD(parse_rawbytes);
PICKET_KEYWORD(parse_pcre);
PICKET_KEYWORD(parse_byte_test);
PICKET_KEYWORD(parse_byte_jump);
PICKET_KEYWORD(parse_byte_extract);
PICKET_KEYWORD(parse_byte_math);
PICKET_KEYWORD(parse_isdataat);
PICKET_KEYWORD(parse_bsize);
PICKET_KEYWORD(parse_base64_decode);  // base64.cc
PICKET_KEYWORD(parse_base64_data);    // base64.cc: the options after it see the decoded bytes
PICKET_KEYWORD(parse_dsize);          // a HeaderOption (payload size of the packet)
PICKET_KEYWORD(parse_asn1);           // asn1.cc: BER elements decoded from an offset

// Header and flow (one file each).
PICKET_KEYWORD(parse_flow);
PICKET_KEYWORD(parse_flowbits);
PICKET_KEYWORD(parse_xbits);
PICKET_KEYWORD(parse_flowint);      // flowint.cc        // xbits.cc
PICKET_KEYWORD(parse_stream_size);  // stream_size.cc
PICKET_KEYWORD(parse_tag);          // tag.cc
PICKET_KEYWORD(parse_noalert);
PICKET_KEYWORD(parse_flags);
PICKET_KEYWORD(parse_ttl);
PICKET_KEYWORD(parse_tos);
PICKET_KEYWORD(parse_id);
PICKET_KEYWORD(parse_ip_proto);
PICKET_KEYWORD(parse_sameip);
PICKET_KEYWORD(parse_fragbits);
PICKET_KEYWORD(parse_seq);
PICKET_KEYWORD(parse_ack);
PICKET_KEYWORD(parse_window);
PICKET_KEYWORD(parse_itype);
PICKET_KEYWORD(parse_icode);
PICKET_KEYWORD(parse_icmp_id);
PICKET_KEYWORD(parse_icmp_seq);
PICKET_KEYWORD(parse_threshold);
PICKET_KEYWORD(parse_detection_filter);

// Transforms (transform.cc): rewrite the current sticky buffer before its options.
PICKET_KEYWORD(parse_dotprefix);
PICKET_KEYWORD(parse_to_lowercase);
PICKET_KEYWORD(parse_to_uppercase);
PICKET_KEYWORD(parse_strip_whitespace);
PICKET_KEYWORD(parse_compress_whitespace);
PICKET_KEYWORD(parse_url_decode);

// App-layer header keywords (app_keywords.cc): urilen, tls.version, dns.opcode.
PICKET_KEYWORD(parse_urilen);
PICKET_KEYWORD(parse_tls_version);
PICKET_KEYWORD(parse_dns_opcode);
// SSH banner values (app_keywords.cc) and app-layer-event (app_layer_event.cc).
PICKET_KEYWORD(parse_ssh_protoversion);
PICKET_KEYWORD(parse_ssh_softwareversion);
PICKET_KEYWORD(parse_app_layer_event);
PICKET_KEYWORD(parse_app_layer_protocol);  // app_layer_protocol.cc

// SIP start-line keywords (sip.cc): sip_method, sip_stat_code.
PICKET_KEYWORD(parse_sip_method);
PICKET_KEYWORD(parse_sip_stat_code);

// FTP bounce (ftpbounce.cc): a PORT command naming another host than the client.
PICKET_KEYWORD(parse_ftpbounce);
// ftpdata_command (ftpdata_command.cc): the transfer command of an ftp-data flow.
PICKET_KEYWORD(parse_ftpdata_command);

// Variables (flowvar.cc): flowvar:<name>,<content>; pktvar:<name>,<content>.
PICKET_KEYWORD(parse_flowvar);
PICKET_KEYWORD(parse_pktvar);
// hostbits (xbits.cc): hostbits:<cmd>,<name>[,<src|dst|both>[,expire <s>]], the xbits host
// table; hostbits:noalert.
PICKET_KEYWORD(parse_hostbits);

#undef PICKET_KEYWORD

// End of a rule's parse (xbits.cc): a rule with xbits track tx becomes an app-layer rule of its
// header's protocol; false with *error when it has neither that nor an app-layer buffer.
bool finish_xbits(Rule& r, std::string* error);

// A content pattern as written ("abc|41 42|d\"e", with its quotes and an optional '!') into
// its bytes (content.cc); kw names the keyword in *error.
bool parse_content_string(std::string_view kw, std::string_view v, std::string* out, bool* negated,
                          std::string* error);

}  // namespace picket::sensor::detect::keywords
