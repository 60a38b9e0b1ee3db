// Body decompression: gzip / zlib / raw deflate / lzma layers, passthrough of bodies that
// are not compressed after all, and the bomb guards.
#include "sensor/applayer/http/internal.h"

#include "common/strings.h"

namespace picket::sensor::applayer::http {

void ParserAccess::inflate_bytes(const uint8_t* data, size_t n) {
    if (d.inflate_done) {
        return;
    }
    d.in_total += n;
    if (!push(0, data, n)) {
        stop_inflate();
    }
}

// The decoded output: counted against the bomb guards and kept. False: stop decoding.
bool ParserAccess::sink(const uint8_t* data, size_t n) {
    HttpTx* t = d.tx;
    size_t allowed = n;
    if (d.out_total + n > cfg.decompress_limit) {
        allowed = cfg.decompress_limit - std::min<uint64_t>(d.out_total, cfg.decompress_limit);
    }
    d.out_total += n;
    bool more = keep(data, allowed);
    if (allowed < n ||
        (d.out_total > 64 * 1024 &&
         d.out_total > d.in_total * static_cast<uint64_t>(cfg.decompress_max_ratio))) {
        event(Event::kDecompressionBomb, t);
        (request() ? t->request_body_truncated : t->response_body_truncated) = true;
        return false;
    }
    // Body full: nothing more to inspect, stop spending CPU.
    return more;
}

void ParserAccess::remember(HttpParser::DirState::Layer& l, const uint8_t* data, size_t n) {
    if (l.produced || l.head_overflow) {
        return;
    }
    if (l.head.size() + n > kLayerHeadMax) {
        l.head_overflow = true;
        l.head.clear();
        l.head.shrink_to_fit();
        return;
    }
    l.head.append(reinterpret_cast<const char*>(data), n);
}

bool ParserAccess::start_inflate(HttpParser::DirState::Layer& l, int bits) {
    l.zs = z_stream{};
    l.zs.zalloc = zalloc_counted;
    l.zs.zfree = zfree_counted;
    l.zs.opaque = &d.zalloc;
    if (inflateInit2(&l.zs, bits) != Z_OK) {
        event(Event::kDecompressionError, d.tx);
        l.mode = HttpParser::DirState::Layer::kDone;
        return false;
    }
    l.inflating = true;
    l.mode = HttpParser::DirState::Layer::kInflate;
    return true;
}

// The layer's input turned out not to be compressed: what it took goes on unchanged.
bool ParserAccess::pass_through(size_t li) {
    auto& l = d.layers[li];
    std::string h;
    h.swap(l.head);
    d.end_layer(l);
    if (l.head_overflow) {
        l.mode = HttpParser::DirState::Layer::kDone;
        return true;
    }
    l.mode = HttpParser::DirState::Layer::kPass;
    return push(li + 1, reinterpret_cast<const uint8_t*>(h.data()), h.size());
}

// Feeds layer li (li == nlayers: the kept body). False: stop decoding.
bool ParserAccess::push(size_t li, const uint8_t* data, size_t n) {
    using Layer = HttpParser::DirState::Layer;
    if (li >= d.nlayers) {
        return sink(data, n);
    }
    Layer& l = d.layers[li];
    size_t i = 0;
    while (i < n || l.mode == Layer::kPass) {
        switch (l.mode) {
            case Layer::kDone:
                return true;
            case Layer::kPass:
                return i < n ? push(li + 1, data + i, n - i) : true;
            case Layer::kDetect: {
                if (l.lzma) {
                    // The properties and dictionary size first: the dictionary is capped.
                    while (l.head.size() < kLzmaPropsSize && i < n) {
                        l.head.push_back(static_cast<char>(data[i++]));
                    }
                    if (l.head.size() < kLzmaPropsSize) {
                        return true;
                    }
                    if (!start_lzma(l)) {
                        return true;
                    }
                    std::string h;
                    h.swap(l.head);
                    if (!lzma_layer(li, reinterpret_cast<const uint8_t*>(h.data()), h.size(),
                                    true)) {
                        return false;
                    }
                    break;
                }
                // Two bytes tell gzip (1f 8b), zlib (RFC 1950 header) and raw deflate apart.
                while (l.head.size() < 2 && i < n) {
                    l.head.push_back(static_cast<char>(data[i++]));
                }
                if (l.head.size() < 2) {
                    return true;
                }
                auto b0 = static_cast<uint8_t>(l.head[0]), b1 = static_cast<uint8_t>(l.head[1]);
                if (b0 == 0x1f && b1 == 0x8b) {
                    l.mode = Layer::kGzipHeader;
                    l.gz_pos = 2;
                    break;
                }
                bool zlib = (b0 & 0x0f) == 8 && (b0 >> 4) <= 7 && ((b0 << 8) | b1) % 31 == 0;
                if (!start_inflate(l, zlib ? 15 : -15)) {
                    return true;
                }
                std::string h;
                h.swap(l.head);
                if (!inflate_layer(li, reinterpret_cast<const uint8_t*>(h.data()), h.size())) {
                    return false;
                }
                break;
            }
            case Layer::kGzipHeader: {
                // Our own header parser: reserved flag bits are ignored (browsers do; zlib
                // refuses them) and the trailer is never checked.
                uint8_t c = data[i++];
                remember(l, &c, 1);
                bool done = false;
                switch (l.gz_state) {
                    case 0:
                        if (l.gz_pos == 2 && c != 8) {
                            if (!pass_through(li)) {
                                return false;
                            }
                            break;
                        }
                        if (l.gz_pos == 3) {
                            l.gz_flags = c;
                        }
                        if (++l.gz_pos == 10) {
                            l.gz_state = 1;
                            l.gz_pos = 0;
                            done = true;
                        }
                        break;
                    case 1:  // XLEN, little endian
                        l.gz_need |= static_cast<uint32_t>(c) << (8 * l.gz_pos);
                        if (++l.gz_pos == 2) {
                            l.gz_state = 2;
                            done = true;
                        }
                        break;
                    case 2:
                        if (--l.gz_need == 0) {
                            l.gz_state = 3;
                            done = true;
                        }
                        break;
                    case 3:
                    case 4:
                        if (c == 0) {
                            ++l.gz_state;
                            done = true;
                        }
                        break;
                    case 5:
                        if (++l.gz_pos == 2) {
                            l.gz_state = 6;
                            done = true;
                        }
                        break;
                    default:
                        break;
                }
                // Skip the optional parts whose flag is not set.
                while (done && l.mode == Layer::kGzipHeader) {
                    done = false;
                    if (l.gz_state == 1 && !(l.gz_flags & 0x04)) {
                        l.gz_state = 3;
                    }
                    if (l.gz_state == 2 && l.gz_need == 0) {
                        l.gz_state = 3;
                    }
                    if (l.gz_state == 3 && !(l.gz_flags & 0x08)) {
                        l.gz_state = 4;
                    }
                    if (l.gz_state == 4 && !(l.gz_flags & 0x10)) {
                        l.gz_state = 5;
                    }
                    if (l.gz_state == 5 && !(l.gz_flags & 0x02)) {
                        l.gz_state = 6;
                    }
                    if (l.gz_state == 5) {
                        l.gz_pos = 0;
                    }
                    if (l.gz_state == 6) {
                        start_inflate(l, -15);
                    }
                }
                break;
            }
            case Layer::kInflate:
                return l.lzma ? lzma_layer(li, data + i, n - i, false)
                              : inflate_layer(li, data + i, n - i);
        }
    }
    return true;
}

// What follows one decompressor step of layer li (zlib or lzma), which produced `produced`
// bytes in `out`: the layer's answer when it is done with this input (false: a later
// layer failed), nullopt to keep stepping. A failure before any output means the body was
// mislabelled (not compressed at all): it is inspected as sent. Corrupt data after some
// output keeps what was decoded (as libhtp and browsers do); at the end of the stream a
// bad trailer is not looked at.
std::optional<bool> ParserAccess::settle_step(size_t li, const uint8_t* out, size_t produced,
                                              bool error, bool stream_end) {
    auto& l = d.layers[li];
    if (error && !l.produced && produced == 0) {
        event(Event::kDecompressionError, d.tx);
        return pass_through(li);
    }
    if (produced > 0 && !l.produced) {
        l.produced = true;
        l.head.clear();
        l.head.shrink_to_fit();
    }
    if (produced > 0 && !push(li + 1, out, produced)) {
        return false;
    }
    if (error || stream_end) {
        if (error) {
            event(Event::kDecompressionError, d.tx);
        }
        d.end_layer(l);
        l.mode = HttpParser::DirState::Layer::kDone;
        return true;
    }
    return std::nullopt;
}

bool ParserAccess::inflate_layer(size_t li, const uint8_t* data, size_t n) {
    auto& l = d.layers[li];
    remember(l, data, n);
    uint8_t out[16384];
    l.zs.next_in = const_cast<Bytef*>(data);
    l.zs.avail_in = static_cast<uInt>(n);
    while (true) {
        l.zs.next_out = out;
        l.zs.avail_out = sizeof(out);
        int rc = inflate(&l.zs, Z_NO_FLUSH);
        const size_t produced = sizeof(out) - l.zs.avail_out;
        const bool error = rc != Z_OK && rc != Z_STREAM_END && rc != Z_BUF_ERROR;
        if (std::optional<bool> r = settle_step(li, out, produced, error, rc == Z_STREAM_END)) {
            return *r;
        }
        if (l.zs.avail_out != 0 || rc == Z_BUF_ERROR || produced == 0) {
            return true;
        }
    }
}

bool ParserAccess::start_lzma(HttpParser::DirState::Layer& l) {
    l.ls = lzma_stream{};
    l.ls.allocator = &d.lzalloc;
    if (lzma_alone_decoder(&l.ls, cfg.lzma_memlimit) != LZMA_OK) {
        event(Event::kDecompressionError, d.tx);
        lzma_end(&l.ls);
        l.mode = HttpParser::DirState::Layer::kDone;
        return false;
    }
    l.inflating = true;
    l.mode = HttpParser::DirState::Layer::kInflate;
    return true;
}

// Feeds an lzma layer; header: data starts with the 5 property bytes, whose dictionary
// size is capped (lzma_dict_cap) before the decoder sees it. Errors: settle_step().
bool ParserAccess::lzma_layer(size_t li, const uint8_t* data, size_t n, bool header) {
    auto& l = d.layers[li];
    remember(l, data, n);
    uint8_t props[kLzmaPropsSize];
    const uint8_t* in = data;
    if (header && n >= kLzmaPropsSize) {
        std::memcpy(props, data, kLzmaPropsSize);
        uint32_t dict = static_cast<uint32_t>(props[1]) | (static_cast<uint32_t>(props[2]) << 8) |
                        (static_cast<uint32_t>(props[3]) << 16) |
                        (static_cast<uint32_t>(props[4]) << 24);
        dict = lzma_dict_cap(cfg.lzma_memlimit, dict);
        for (int b = 0; b < 4; ++b) {
            props[1 + b] = static_cast<uint8_t>(dict >> (8 * b));
        }
        in = props;
    }
    uint8_t out[16384];
    size_t done_in = 0;
    // The patched header first, then the rest of data as is.
    while (true) {
        if (l.ls.avail_in == 0 && done_in < n) {
            if (in == props && done_in == 0) {
                l.ls.next_in = props;
                l.ls.avail_in = kLzmaPropsSize;
                done_in = kLzmaPropsSize;
            } else {
                l.ls.next_in = data + done_in;
                l.ls.avail_in = n - done_in;
                done_in = n;
            }
        }
        l.ls.next_out = out;
        l.ls.avail_out = sizeof(out);
        lzma_ret rc = lzma_code(&l.ls, LZMA_RUN);
        const size_t produced = sizeof(out) - l.ls.avail_out;
        const bool error = rc != LZMA_OK && rc != LZMA_STREAM_END && rc != LZMA_BUF_ERROR;
        if (std::optional<bool> r = settle_step(li, out, produced, error, rc == LZMA_STREAM_END)) {
            return *r;
        }
        if (l.ls.avail_out != 0 && l.ls.avail_in == 0 && done_in >= n) {
            return true;
        }
        if (rc == LZMA_BUF_ERROR || (produced == 0 && l.ls.avail_in == 0 && done_in >= n)) {
            return true;
        }
    }
}

void ParserAccess::stop_inflate() {
    d.inflate_done = true;
    d.end_inflate();
}

}  // namespace picket::sensor::applayer::http
