#include "sensor/inspect/inspect.h"

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
    }
    return "unknown";
}

}  // namespace picket::sensor::inspect
