// X.509 certificates: a bounded DER reader for the fields detection and EVE use (subject,
// issuer, serial, validity), rendered as Suricata does.
#include "sensor/applayer/tls/tls.h"

#include <cstdio>
#include <cstring>
#include <string>

#include "sensor/applayer/byte_reader.h"

namespace picket::sensor::applayer::tls {

namespace {

struct Tlv {
    uint8_t tag = 0;
    const uint8_t* p = nullptr;
    size_t n = 0;
};

// Reads the next TLV from *r. Only low tag numbers and definite lengths (DER) are accepted.
bool der_next(ByteReader* r, Tlv* out) {
    uint8_t tag, l0;
    if (!r->u8(&tag) || (tag & 0x1F) == 0x1F || !r->u8(&l0)) {
        return false;
    }
    size_t len = l0;
    if (l0 & 0x80) {
        int k = l0 & 0x7F;
        if (k == 0 || k > 4) {
            return false;
        }
        len = 0;
        for (int i = 0; i < k; ++i) {
            uint8_t b;
            if (!r->u8(&b)) {
                return false;
            }
            len = len << 8 | b;
        }
    }
    out->tag = tag;
    return r->bytes(len, &out->p) && ((out->n = len), true);
}

bool der_expect(ByteReader* r, uint8_t tag, Tlv* out) {
    return der_next(r, out) && out->tag == tag;
}

struct OidName {
    uint8_t len;
    uint8_t der[10];
    const char* name;
};
// x509-parser's abbreviations first (CN, C, L, ST, O, OU, DC, Email), then X.520 short names.
constexpr OidName kOidNames[] = {
    {3, {0x55, 0x04, 0x03}, "CN"},
    {3, {0x55, 0x04, 0x06}, "C"},
    {3, {0x55, 0x04, 0x07}, "L"},
    {3, {0x55, 0x04, 0x08}, "ST"},
    {3, {0x55, 0x04, 0x0A}, "O"},
    {3, {0x55, 0x04, 0x0B}, "OU"},
    {10, {0x09, 0x92, 0x26, 0x89, 0x93, 0xF2, 0x2C, 0x64, 0x01, 0x19}, "DC"},
    {9, {0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x09, 0x01}, "Email"},
    {3, {0x55, 0x04, 0x04}, "surname"},
    {3, {0x55, 0x04, 0x05}, "serialNumber"},
    {3, {0x55, 0x04, 0x09}, "streetAddress"},
    {3, {0x55, 0x04, 0x0C}, "title"},
    {3, {0x55, 0x04, 0x0F}, "businessCategory"},
    {3, {0x55, 0x04, 0x11}, "postalCode"},
    {3, {0x55, 0x04, 0x2A}, "givenName"},
    {3, {0x55, 0x04, 0x2B}, "initials"},
};

void append_oid_text(std::string* s, const uint8_t* p, size_t n) {
    // Dotted form; the first byte packs the first two arcs (X.690 8.19.4).
    uint64_t v = 0;
    bool first = true;
    for (size_t i = 0; i < n; ++i) {
        if (v > (UINT64_MAX >> 7)) {
            *s += "?";
            return;
        }
        v = v << 7 | (p[i] & 0x7F);
        if (p[i] & 0x80) {
            continue;
        }
        if (first) {
            uint64_t a = v < 40 ? 0 : (v < 80 ? 1 : 2);
            s->append(std::to_string(a));
            s->push_back('.');
            s->append(std::to_string(v - 40 * a));
            first = false;
        } else {
            s->push_back('.');
            s->append(std::to_string(v));
        }
        v = 0;
    }
}

bool is_string_tag(uint8_t t) {
    switch (t) {
        case 0x07:  // ObjectDescriptor
        case 0x0C:  // UTF8String
        case 0x12:  // NumericString
        case 0x13:  // PrintableString
        case 0x14:  // T61String
        case 0x15:  // VideotexString
        case 0x16:  // IA5String
        case 0x19:  // GraphicString
        case 0x1A:  // VisibleString
        case 0x1B:  // GeneralString
        case 0x1E:  // BMPString (x509-parser takes its bytes as they are)
            return true;
        default:
            return false;
    }
}

void append_hex_upper(std::string* s, const uint8_t* p, size_t n, const char* sep) {
    static const char kHex[] = "0123456789ABCDEF";
    for (size_t i = 0; i < n; ++i) {
        if (i != 0 && sep != nullptr) {
            *s += sep;
        }
        s->push_back(kHex[p[i] >> 4]);
        s->push_back(kHex[p[i] & 15]);
    }
}

// Name ::= SEQUENCE OF RelativeDistinguishedName (SET OF AttributeTypeAndValue), rendered as
// x509-parser (Suricata) does: RDNs joined by ", ", attributes of one RDN by " + ".
bool render_name(const Tlv& name, std::string* out) {
    ByteReader rdns(name.p, name.n);
    out->clear();
    while (rdns.left() > 0) {
        Tlv set;
        if (!der_expect(&rdns, 0x31, &set)) {
            return false;
        }
        if (!out->empty()) {
            *out += ", ";
        }
        ByteReader attrs(set.p, set.n);
        bool first = true;
        while (attrs.left() > 0) {
            Tlv atv, oid, val;
            if (!der_expect(&attrs, 0x30, &atv)) {
                return false;
            }
            ByteReader a(atv.p, atv.n);
            if (!der_expect(&a, 0x06, &oid) || !der_next(&a, &val)) {
                return false;
            }
            if (!first) {
                *out += " + ";
            }
            first = false;
            const char* abbrev = nullptr;
            for (const OidName& o : kOidNames) {
                if (o.len == oid.n && std::memcmp(o.der, oid.p, oid.n) == 0) {
                    abbrev = o.name;
                    break;
                }
            }
            if (abbrev != nullptr) {
                *out += abbrev;
            } else {
                append_oid_text(out, oid.p, oid.n);
            }
            out->push_back('=');
            if (is_string_tag(val.tag)) {
                out->append(reinterpret_cast<const char*>(val.p), val.n);
            } else {
                append_hex_upper(out, val.p, val.n, nullptr);
            }
        }
    }
    return true;
}

// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's days_from_civil).
int64_t days_from_civil(int64_t y, unsigned m, unsigned d) {
    y -= m <= 2;
    const int64_t era = (y >= 0 ? y : y - 399) / 400;
    const unsigned yoe = static_cast<unsigned>(y - era * 400);
    const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + static_cast<int64_t>(doe) - 719468;
}

bool digits(const uint8_t* p, int n, int* out) {
    int v = 0;
    for (int i = 0; i < n; ++i) {
        if (p[i] < '0' || p[i] > '9') {
            return false;
        }
        v = v * 10 + (p[i] - '0');
    }
    *out = v;
    return true;
}

// UTCTime "YYMMDDHHMMSSZ" (RFC 5280 4.1.2.5.1: YY < 50 is 20YY) or GeneralizedTime
// "YYYYMMDDHHMMSSZ".
bool parse_time(const Tlv& t, int64_t* out) {
    int year, mon, day, hh, mm, ss;
    const uint8_t* p = t.p;
    if (t.tag == 0x17 && t.n == 13 && p[12] == 'Z') {
        if (!digits(p, 2, &year)) {
            return false;
        }
        year += year < 50 ? 2000 : 1900;
        p += 2;
    } else if (t.tag == 0x18 && t.n == 15 && p[14] == 'Z') {
        if (!digits(p, 4, &year)) {
            return false;
        }
        p += 4;
    } else {
        return false;
    }
    if (!digits(p, 2, &mon) || !digits(p + 2, 2, &day) || !digits(p + 4, 2, &hh) ||
        !digits(p + 6, 2, &mm) || !digits(p + 8, 2, &ss) || mon < 1 || mon > 12 || day < 1 ||
        day > 31 || hh > 23 || mm > 59 || ss > 60) {
        return false;
    }
    *out = days_from_civil(year, static_cast<unsigned>(mon), static_cast<unsigned>(day)) * 86400 +
           hh * 3600 + mm * 60 + ss;
    return true;
}

}  // namespace

bool parse_certificate(const uint8_t* der, size_t len, CertInfo* out) {
    out->parsed = false;
    out->subject.clear();
    out->issuer.clear();
    out->serial.clear();
    out->not_before = out->not_after = 0;
    ByteReader top(der, len);
    Tlv cert, tbs, t, serial, issuer, validity, subject;
    if (!der_expect(&top, 0x30, &cert)) {
        return false;
    }
    ByteReader c(cert.p, cert.n);
    if (!der_expect(&c, 0x30, &tbs)) {
        return false;
    }
    ByteReader r(tbs.p, tbs.n);
    if (!der_next(&r, &t)) {
        return false;
    }
    if (t.tag == 0xA0) {  // [0] EXPLICIT version
        if (!der_next(&r, &t)) {
            return false;
        }
    }
    serial = t;
    if (serial.tag != 0x02 || serial.n == 0) {
        return false;
    }
    Tlv sigalg;
    if (!der_expect(&r, 0x30, &sigalg) || !der_expect(&r, 0x30, &issuer) ||
        !der_expect(&r, 0x30, &validity) || !der_expect(&r, 0x30, &subject)) {
        return false;
    }
    CertInfo tmp;
    ByteReader v(validity.p, validity.n);
    Tlv nb, na;
    if (!der_next(&v, &nb) || !der_next(&v, &na) || !parse_time(nb, &tmp.not_before) ||
        !parse_time(na, &tmp.not_after)) {
        return false;
    }
    if (!render_name(issuer, &tmp.issuer) || !render_name(subject, &tmp.subject)) {
        return false;
    }
    append_hex_upper(&tmp.serial, serial.p, serial.n, ":");
    out->subject = std::move(tmp.subject);
    out->issuer = std::move(tmp.issuer);
    out->serial = std::move(tmp.serial);
    out->not_before = tmp.not_before;
    out->not_after = tmp.not_after;
    out->parsed = true;
    return true;
}

}  // namespace picket::sensor::applayer::tls
