#include "sensor/detect/flowbits.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <map>

#include "common/strings.h"
#include "sensor/detect/content_inspect.h"

namespace picket::sensor::detect {

uint32_t FlowbitRegistry::intern(std::string_view name) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = ids_.find(name);
    if (it != ids_.end()) {
        return it->second;
    }
    uint32_t id = static_cast<uint32_t>(names_.size());
    names_.emplace_back(name);
    ids_.emplace(std::string_view(names_.back()), id);
    return id;
}

bool FlowbitRegistry::intern_int(std::string_view name, uint8_t* id) {
    std::lock_guard<std::mutex> lock(mu_);
    for (size_t i = 0; i < int_names_.size(); ++i) {
        if (int_names_[i] == name) {
            *id = static_cast<uint8_t>(i);
            return true;
        }
    }
    if (int_names_.size() >= kMaxFlowints) {
        return false;
    }
    int_names_.emplace_back(name);
    *id = static_cast<uint8_t>(int_names_.size() - 1);
    return true;
}

bool run_flowints(const std::vector<FlowintOp>& ops, FlowintValues& vals) {
    for (const FlowintOp& op : ops) {
        if (op.cmd == FlowintCmd::kIsset || op.cmd == FlowintCmd::kNotset) {
            if (vals.has(op.var) != (op.cmd == FlowintCmd::kIsset)) {
                return false;
            }
            continue;
        }
        if (op.value_is_var && !vals.has(op.value_var)) {
            return false;
        }
        const uint32_t operand = op.value_is_var ? vals.v[op.value_var] : op.value;
        const bool has = vals.has(op.var);
        uint32_t& v = vals.v[op.var];
        bool ok = true;
        switch (op.cmd) {
            case FlowintCmd::kSet:
                v = operand;
                break;
            case FlowintCmd::kAdd:
                v = has ? v + operand : operand;
                break;
            case FlowintCmd::kSub:
                v = has ? v - operand : 0u - operand;
                break;
            case FlowintCmd::kEq:
                ok = has && v == operand;
                break;
            case FlowintCmd::kNe:
                ok = has && v != operand;
                break;
            case FlowintCmd::kLt:
                ok = has && v < operand;
                break;
            case FlowintCmd::kLe:
                ok = has && v <= operand;
                break;
            case FlowintCmd::kGt:
                ok = has && v > operand;
                break;
            case FlowintCmd::kGe:
                ok = has && v >= operand;
                break;
            default:
                break;
        }
        if (!ok) {
            return false;
        }
        if (op.cmd == FlowintCmd::kSet || op.cmd == FlowintCmd::kAdd ||
            op.cmd == FlowintCmd::kSub) {
            vals.set |= 1u << op.var;
        }
    }
    return true;
}

bool FlowbitRegistry::intern_var(VarScope scope, std::string_view name, uint16_t* id) {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<std::string>& names = var_names_[static_cast<int>(scope)];
    for (size_t i = 0; i < names.size(); ++i) {
        if (names[i] == name) {
            *id = static_cast<uint16_t>(i);
            return true;
        }
    }
    if (names.size() >= kMaxVarNames) {
        return false;
    }
    names.emplace_back(name);
    *id = static_cast<uint16_t>(names.size() - 1);
    return true;
}

std::string FlowbitRegistry::var_name(VarScope scope, uint16_t id) const {
    std::lock_guard<std::mutex> lock(mu_);
    const std::vector<std::string>& names = var_names_[static_cast<int>(scope)];
    return id < names.size() ? names[id] : std::string();
}

uint32_t FlowbitRegistry::var_count(VarScope scope) const {
    std::lock_guard<std::mutex> lock(mu_);
    return static_cast<uint32_t>(var_names_[static_cast<int>(scope)].size());
}

std::string FlowbitRegistry::int_name(uint8_t id) const {
    std::lock_guard<std::mutex> lock(mu_);
    return id < int_names_.size() ? int_names_[id] : std::string();
}

uint32_t FlowbitRegistry::int_count() const {
    std::lock_guard<std::mutex> lock(mu_);
    return static_cast<uint32_t>(int_names_.size());
}

bool VarSet::get(uint16_t id, std::string_view* out) const {
    for (uint16_t i = 0; i < count; ++i) {
        if (entries[i].id == id) {
            *out = std::string_view(reinterpret_cast<const char*>(bytes) + entries[i].off,
                                    entries[i].len);
            return true;
        }
    }
    return false;
}

bool VarSet::set(uint16_t id, const uint8_t* v, uint32_t len) {
    len = std::min(len, kMaxVarLen);
    uint16_t k = 0;
    while (k < count && entries[k].id != id) {
        ++k;
    }
    const uint32_t old = k < count ? entries[k].len : 0;
    if ((k == count && count == kMaxVarsPerSet) || used - old + len > kVarSetBytes) {
        return false;
    }
    if (k < count) {
        // Take the old value out: the values after it move down, the entry keeps its place.
        const uint16_t off = entries[k].off;
        std::memmove(bytes + off, bytes + off + old, used - off - old);
        for (uint16_t i = 0; i < count; ++i) {
            if (entries[i].off > off) {
                entries[i].off = static_cast<uint16_t>(entries[i].off - old);
            }
        }
        used = static_cast<uint16_t>(used - old);
    } else {
        entries[k].id = id;
        ++count;
    }
    if (len != 0) {
        std::memcpy(bytes + used, v, len);
    }
    entries[k].off = used;
    entries[k].len = static_cast<uint16_t>(len);
    used = static_cast<uint16_t>(used + len);
    return true;
}

bool FlowbitRegistry::find(std::string_view name, uint32_t* id) const {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = ids_.find(name);
    if (it == ids_.end()) {
        return false;
    }
    *id = it->second;
    return true;
}

std::string FlowbitRegistry::name(uint32_t id) const {
    std::lock_guard<std::mutex> lock(mu_);
    return id < names_.size() ? names_[id] : std::string();
}

uint32_t FlowbitRegistry::size() const {
    std::lock_guard<std::mutex> lock(mu_);
    return static_cast<uint32_t>(names_.size());
}

void FlowbitStore::clear() {
    std::memset(words, 0, sizeof(uint64_t) * nwords);
    tcp = TcpSeqState{};
    ints = FlowintValues{};
    vars = nullptr;  // a released store gave its block back (FlowbitPool::release)
    tags = SessionTags{};
    tx_bits = TxBits{};
}

void tcp_seq_note(TcpSeqState& s, const decode::Packet& p, flow::Direction dir) {
    const int d = static_cast<int>(dir);
    const bool syn = (p.tcp_flags & 0x02) != 0;
    const bool fin = (p.tcp_flags & 0x01) != 0;
    if ((s.known & (1u << d)) == 0) {
        s.isn[d] = syn ? p.tcp_seq : p.tcp_seq - 1;
        s.next[d] = s.isn[d] + 1;
        s.known = static_cast<uint8_t>(s.known | (1u << d));
    }
    const uint32_t end = p.tcp_seq + p.payload_len + (syn ? 1 : 0) + (fin ? 1 : 0);
    if (static_cast<int32_t>(end - s.next[d]) > 0) {
        s.next[d] = end;
    }
}

FlowbitPool::FlowbitPool(uint32_t nbits, size_t max_stores, size_t chunk, size_t max_var_sets)
    : nwords_(std::max<uint32_t>(1, (nbits + 63) / 64)),
      max_stores_(max_stores),
      chunk_(std::max<size_t>(1, chunk)),
      max_var_sets_(max_var_sets) {}

VarSet* FlowbitPool::vars_of(FlowbitStore& s) {
    if (s.vars != nullptr) {
        return s.vars;
    }
    if (var_free_ == nullptr) {
        constexpr size_t kVarChunk = 64;
        const size_t n = std::min(kVarChunk, max_var_sets_ - std::min(max_var_sets_, var_total_));
        if (n == 0) {
            ++counters_.vars_exhausted;
            return nullptr;
        }
        var_chunks_.push_back(std::make_unique<VarSet[]>(n));
        VarSet* c = var_chunks_.back().get();
        for (size_t i = 0; i < n; ++i) {
            c[i].next_free = var_free_;
            var_free_ = &c[i];
        }
        var_total_ += n;
    }
    VarSet* v = var_free_;
    var_free_ = v->next_free;
    v->next_free = nullptr;
    v->clear();
    s.vars = v;
    return v;
}

FlowbitPool::~FlowbitPool() = default;

bool FlowbitPool::add_chunk() {
    size_t n = std::min(chunk_, max_stores_ - std::min(max_stores_, total_));
    if (n == 0) {
        return false;
    }
    Chunk c;
    c.stores = std::make_unique<FlowbitStore[]>(n);
    c.words = std::make_unique<uint64_t[]>(n * nwords_);
    c.size = n;
    c.live = n;
    const auto index = static_cast<uint32_t>(chunks_.size());
    for (size_t i = 0; i < n; ++i) {
        FlowbitStore& s = c.stores[i];
        s.words = c.words.get() + i * nwords_;
        s.nwords = nwords_;
        s.chunk = index;
        s.next_free = free_;
        free_ = &s;
    }
    total_ += n;
    chunks_.push_back(std::move(c));
    return true;
}

FlowbitStore* FlowbitPool::acquire() {
    if (free_ == nullptr && !add_chunk()) {
        ++counters_.exhausted;
        return nullptr;
    }
    FlowbitStore* s = free_;
    free_ = s->next_free;
    s->next_free = nullptr;
    s->clear();
    ++counters_.acquired;
    counters_.in_use.set(counters_.in_use.get() + 1);
    return s;
}

void FlowbitPool::retire(FlowbitStore* s) {
    Chunk& c = chunks_[s->chunk];
    if (--c.live == 0) {
        total_ -= c.size;
        c.stores.reset();
        c.words.reset();
    }
}

void FlowbitPool::release(FlowbitStore* s) {
    if (s == nullptr) {
        return;
    }
    counters_.in_use.set(counters_.in_use.get() - 1);
    if (s->vars != nullptr) {
        s->vars->next_free = var_free_;
        var_free_ = s->vars;
        s->vars = nullptr;
    }
    if (s->nwords != nwords_) {
        retire(s);  // an older size: not reused
        return;
    }
    s->next_free = free_;
    free_ = s;
}

void FlowbitPool::grow_bits(uint32_t nbits) {
    uint32_t words = (nbits + 63) / 64;
    if (words <= nwords_) {
        return;
    }
    // Free stores of the old size are retired now; the ones in use when released.
    FlowbitStore* s = free_;
    free_ = nullptr;
    nwords_ = words;
    while (s != nullptr) {
        FlowbitStore* next = s->next_free;
        retire(s);
        s = next;
    }
}

FlowbitStore* flowbits_acquire(flow::Flow& f, FlowbitPool& pool) {
    auto* s = FlowbitsSlot::get(f);
    if (s == nullptr) {
        s = pool.acquire();
        FlowbitsSlot::set(f, s);
    }
    return s;
}

void flowbits_release(flow::Flow& f, FlowbitPool& pool) {
    auto* s = FlowbitsSlot::get(f);
    if (s != nullptr) {
        pool.release(s);
        FlowbitsSlot::set(f, nullptr);
    }
}

bool has_flowbit_actions(const Rule& r) {
    for (const FlowbitOp& op : r.flowbits) {
        if (op.cmd == FlowbitCmd::kSet || op.cmd == FlowbitCmd::kUnset ||
            op.cmd == FlowbitCmd::kToggle) {
            return true;
        }
    }
    return false;
}

void apply_flowbit_actions(const Rule& r, FlowbitStore& s) {
    for (const FlowbitOp& op : r.flowbits) {
        switch (op.cmd) {
            case FlowbitCmd::kSet:
                for (uint32_t b : op.bits) {
                    s.set(b);
                }
                break;
            case FlowbitCmd::kUnset:
                for (uint32_t b : op.bits) {
                    s.unset(b);
                }
                break;
            case FlowbitCmd::kToggle:
                for (uint32_t b : op.bits) {
                    s.toggle(b);
                }
                break;
            default:
                break;
        }
    }
}

bool flowbit_condition(const FlowbitOp& op, const FlowbitStore* s) {
    // isset a|b: any set; isset a&b (or one name): all set; isnotset a|b: any not set;
    // isnotset a&b: none set (Suricata's or-list and Snort's & semantics).
    const bool isset = op.cmd == FlowbitCmd::kIsset;
    if (op.any_of) {
        for (uint32_t b : op.bits) {
            const bool set = s != nullptr && s->test(b);
            if (set == isset) {
                return true;
            }
        }
        return false;
    }
    for (uint32_t b : op.bits) {
        const bool set = s != nullptr && s->test(b);
        if (set != isset) {
            return false;
        }
    }
    return true;
}

uint32_t store_captures(const Rule& r, const PayloadScratch& s, VarSet* flow, VarSet* pkt) {
    uint32_t dropped = 0;
    for (size_t i = 0; i < r.var_captures.size() && i < kMaxRuleCaptures; ++i) {
        if (s.cap_len[i] < 0) {
            continue;  // the group did not take part in the match
        }
        const VarCapture& c = r.var_captures[i];
        VarSet* to = c.scope == VarScope::kFlow ? flow : pkt;
        if (to == nullptr || !to->set(c.var, s.cap_bytes[i], static_cast<uint32_t>(s.cap_len[i]))) {
            ++dropped;
        }
    }
    return dropped;
}

VarNames snapshot_var_names(const FlowbitRegistry& reg) {
    VarNames n;
    const uint32_t nbits = reg.size();
    for (uint32_t id = 0; id < nbits; ++id) {
        n.flowbits.push_back(reg.name(id));
    }
    const uint32_t nints = reg.int_count();
    for (uint32_t id = 0; id < nints; ++id) {
        n.flowints.push_back(reg.int_name(static_cast<uint8_t>(id)));
    }
    for (VarScope scope : {VarScope::kFlow, VarScope::kPacket}) {
        std::vector<std::string>& out = scope == VarScope::kFlow ? n.flowvars : n.pktvars;
        const uint32_t nvars = reg.var_count(scope);
        for (uint32_t id = 0; id < nvars; ++id) {
            out.push_back(reg.var_name(scope, static_cast<uint16_t>(id)));
        }
    }
    return n;
}

namespace {

// "NAME":[{"var":"value"},...] for the variables of v that have a name in names.
void append_var_array(const char* name, const VarSet* v, const std::vector<std::string>& names,
                      bool* first, std::string* out) {
    if (v == nullptr) {
        return;
    }
    bool open = false;
    for (uint16_t i = 0; i < v->count; ++i) {
        const VarSet::Entry& e = v->entries[i];
        if (e.id >= names.size()) {
            continue;
        }
        if (!open) {
            *out += *first ? "\"" : ",\"";
            *first = false;
            *out += name;
            *out += "\":[";
            open = true;
        } else {
            out->push_back(',');
        }
        out->push_back('{');
        strings::append_json_string(*out, names[e.id]);
        out->push_back(':');
        strings::append_json_printable(*out, v->bytes + e.off, e.len);
        out->push_back('}');
    }
    if (open) {
        out->push_back(']');
    }
}

}  // namespace

void append_vars_metadata(const FlowbitStore* flow, const VarSet* pkt, const VarNames& names,
                          std::string* out) {
    const size_t start = out->size();
    *out += start == 0 ? "\"metadata\":{" : ",\"metadata\":{";
    const size_t body = out->size();
    bool first = true;
    // Suricata's traffic tagging: a flowbit named traffic/id/NAME or traffic/label/NAME is
    // not listed with the flowbits but as NAME in the record's "traffic" object.
    static constexpr std::string_view kTrafficId = "traffic/id/";
    static constexpr std::string_view kTrafficLabel = "traffic/label/";
    std::string traffic_id, traffic_label;
    if (flow != nullptr) {
        bool open = false;
        for (uint32_t i = 0; i < flow->nwords; ++i) {
            for (uint64_t word = flow->words[i]; word != 0; word &= word - 1) {
                const uint32_t id = i * 64 + static_cast<uint32_t>(__builtin_ctzll(word));
                if (id >= names.flowbits.size()) {
                    continue;  // a name newer than this generation
                }
                const std::string_view name = names.flowbits[id];
                if (name.starts_with(kTrafficId) || name.starts_with(kTrafficLabel)) {
                    const bool is_id = name.starts_with(kTrafficId);
                    std::string& list = is_id ? traffic_id : traffic_label;
                    list += list.empty() ? "" : ",";
                    strings::append_json_string(
                        list, name.substr(is_id ? kTrafficId.size() : kTrafficLabel.size()));
                    continue;
                }
                *out += open ? "," : "\"flowbits\":[";
                open = true;
                strings::append_json_string(*out, name);
            }
        }
        if (open) {
            out->push_back(']');
            first = false;
        }
        open = false;
        for (uint32_t id = 0; id < kMaxFlowints && id < names.flowints.size(); ++id) {
            if (!flow->ints.has(static_cast<uint8_t>(id))) {
                continue;
            }
            *out += open ? "," : (first ? "\"flowints\":{" : ",\"flowints\":{");
            open = true;
            first = false;
            strings::append_json_string(*out, names.flowints[id]);
            out->push_back(':');
            *out += std::to_string(flow->ints.v[id]);
        }
        if (open) {
            out->push_back('}');
        }
        append_var_array("flowvars", flow->vars, names.flowvars, &first, out);
    }
    append_var_array("pktvars", pkt, names.pktvars, &first, out);
    if (out->size() == body) {
        out->resize(start);  // nothing to print: no "metadata"
    } else {
        out->push_back('}');
    }
    if (!traffic_id.empty() || !traffic_label.empty()) {
        *out += out->empty() ? "\"traffic\":{" : ",\"traffic\":{";
        if (!traffic_id.empty()) {
            *out += "\"id\":[" + traffic_id + "]";
        }
        if (!traffic_label.empty()) {
            *out += traffic_id.empty() ? "\"label\":[" : ",\"label\":[";
            *out += traffic_label + "]";
        }
        out->push_back('}');
    }
}

std::vector<std::string> flowbit_warnings(const std::vector<const Rule*>& rules,
                                          const FlowbitRegistry* reg) {
    std::vector<bool> written;
    std::map<uint32_t, const Rule*> checked;  // ordered: deterministic output by id
    for (const Rule* r : rules) {
        for (const FlowbitOp& op : r->flowbits) {
            for (uint32_t b : op.bits) {
                if (op.cmd == FlowbitCmd::kIsset || op.cmd == FlowbitCmd::kIsnotset) {
                    checked.emplace(b, r);
                } else {
                    if (written.size() <= b) {
                        written.resize(b + 1, false);
                    }
                    written[b] = true;
                }
            }
        }
    }
    std::vector<std::string> out;
    for (const auto& [bit, r] : checked) {
        if (bit < written.size() && written[bit]) {
            continue;
        }
        std::string name = reg != nullptr ? reg->name(bit) : std::string();
        if (name.empty()) {
            name = std::to_string(bit);
            name.insert(name.begin(), '#');
        }
        std::string w = r->file;
        w += ':';
        w += std::to_string(r->line);
        w += " sid ";
        w += std::to_string(r->sid);
        w += ": flowbit '";
        w += name;
        w += "' is checked but never set";
        out.push_back(std::move(w));
    }
    return out;
}

// ---------------------------------------------------------------------------------------
// xbits table: open addressing over kXbitSlots slots, a probe window of kXbitProbe slots from
// the key's home. A slot is free when its key is 0 or its expiry has passed.

namespace {

constexpr size_t kXbitSlots = size_t{1} << 16;
constexpr size_t kXbitProbe = 16;

struct XbitSlot {
    std::atomic<uint64_t> key{0};
    std::atomic<int64_t> expire_ns{0};
};

std::array<XbitSlot, kXbitSlots>& xbit_table() {
    static std::array<XbitSlot, kXbitSlots> table;
    return table;
}
std::atomic<uint64_t> g_xbits_dropped{0};

uint64_t mix64(uint64_t h, uint64_t v) {
    h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
    return h * 0xff51afd7ed558ccdULL;
}

uint64_t addr_hash(uint64_t h, const decode::Address& a) {
    uint64_t lo = 0, hi = 0;
    std::memcpy(&lo, a.b, 8);
    std::memcpy(&hi, a.b + 8, 8);
    return mix64(mix64(h, lo), hi);
}

uint64_t finish_key(uint64_t h) {
    h ^= h >> 29;
    return h == 0 ? 1 : h;
}

// The host table key of bit name_hash on host a; never 0. ip_src and ip_dst (and hostbits'
// both) name the same host table (a bit set on the destination is seen on that host as a
// source); address pairs are a table of their own.
uint64_t host_key(uint64_t name_hash, const decode::Address& a) {
    return finish_key(addr_hash(mix64(name_hash, 1), a));
}

// The table key of a host or ip_pair op for packet p (kIpBoth: the source's); never 0.
uint64_t xbit_key(const XbitOp& op, const decode::Packet& p) {
    if (op.track != XbitTrack::kIpPair) {
        return host_key(op.name_hash, op.track == XbitTrack::kIpDst ? p.dst : p.src);
    }
    // Unordered: the pair is the same bit in both directions.
    const bool src_first = std::memcmp(p.src.b, p.dst.b, 16) <= 0;
    uint64_t h = mix64(op.name_hash, 2);
    h = addr_hash(h, src_first ? p.src : p.dst);
    h = addr_hash(h, src_first ? p.dst : p.src);
    return finish_key(h);
}

XbitSlot* xbit_find(uint64_t key) {
    auto& t = xbit_table();
    const size_t home = static_cast<size_t>(key) & (kXbitSlots - 1);
    for (size_t i = 0; i < kXbitProbe; ++i) {
        XbitSlot& s = t[(home + i) & (kXbitSlots - 1)];
        if (s.key.load(std::memory_order_acquire) == key) {
            return &s;
        }
    }
    return nullptr;
}

bool xbit_live(const XbitSlot* s, int64_t now_ns) {
    return s != nullptr && s->expire_ns.load(std::memory_order_acquire) > now_ns;
}

void xbit_set(uint64_t key, int64_t now_ns, uint32_t expire_s) {
    const int64_t expire = now_ns + static_cast<int64_t>(expire_s) * 1000000000;
    if (XbitSlot* s = xbit_find(key)) {
        s->expire_ns.store(expire, std::memory_order_release);
        return;
    }
    auto& t = xbit_table();
    const size_t home = static_cast<size_t>(key) & (kXbitSlots - 1);
    for (size_t i = 0; i < kXbitProbe; ++i) {
        XbitSlot& s = t[(home + i) & (kXbitSlots - 1)];
        uint64_t old = s.key.load(std::memory_order_acquire);
        if (old != 0 && s.expire_ns.load(std::memory_order_acquire) > now_ns) {
            continue;  // a live bit
        }
        // The slot's expiry has passed, so a reader that sees the new key before the new
        // expiry reads the bit as unset.
        if (s.key.compare_exchange_strong(old, key, std::memory_order_acq_rel)) {
            s.expire_ns.store(expire, std::memory_order_release);
            return;
        }
    }
    g_xbits_dropped.fetch_add(1, std::memory_order_relaxed);
}

void xbit_unset(uint64_t key) {
    if (XbitSlot* s = xbit_find(key)) {
        s->expire_ns.store(0, std::memory_order_release);
    }
}

}  // namespace

bool xbit_isset(const XbitOp& op, const decode::Packet& p) {
    if (op.track == XbitTrack::kIpBoth) {
        return xbit_live(xbit_find(host_key(op.name_hash, p.src)), p.ts_ns) &&
               xbit_live(xbit_find(host_key(op.name_hash, p.dst)), p.ts_ns);
    }
    return xbit_live(xbit_find(xbit_key(op, p)), p.ts_ns);
}

bool xbit_condition(const XbitOp& op, const decode::Packet& p, const FlowbitStore* flow,
                    const AppView* view) {
    bool set = false;
    if (op.track == XbitTrack::kTx) {
        set = flow != nullptr && view != nullptr &&
              flow->tx_bits.test(tx_bit_key(op.name_hash, *view));
    } else if (op.track == XbitTrack::kIpBoth && op.cmd == FlowbitCmd::kIsnotset) {
        // Neither host has the bit.
        return !xbit_live(xbit_find(host_key(op.name_hash, p.src)), p.ts_ns) &&
               !xbit_live(xbit_find(host_key(op.name_hash, p.dst)), p.ts_ns);
    } else {
        set = xbit_isset(op, p);
    }
    return op.cmd == FlowbitCmd::kIsnotset ? !set : set;
}

uint64_t tx_bit_key(uint64_t name_hash, const AppView& view) {
    // The protocol is part of the key: a flow that changes protocol (STARTTLS, an HTTP
    // CONNECT tunnel) numbers its new transactions from 0 again.
    return finish_key(
        mix64(mix64(mix64(name_hash, 3), static_cast<uint64_t>(view.proto)), view.tx_id));
}

bool has_tx_xbit_sets(const Rule& r) {
    for (const XbitOp& op : r.xbits) {
        if (op.track == XbitTrack::kTx && op.cmd == FlowbitCmd::kSet) {
            return true;
        }
    }
    return false;
}

namespace {

void apply_host_op(const XbitOp& op, uint64_t key, int64_t now_ns) {
    switch (op.cmd) {
        case FlowbitCmd::kSet:
            xbit_set(key, now_ns, op.expire_s);
            break;
        case FlowbitCmd::kUnset:
            xbit_unset(key);
            break;
        case FlowbitCmd::kToggle:
            if (xbit_live(xbit_find(key), now_ns)) {
                xbit_unset(key);
            } else {
                xbit_set(key, now_ns, op.expire_s);
            }
            break;
        default:
            break;
    }
}

}  // namespace

void apply_xbit_actions(const Rule& r, const decode::Packet& p, FlowbitStore* flow,
                        const AppView* view) {
    for (const XbitOp& op : r.xbits) {
        switch (op.track) {
            case XbitTrack::kTx:
                // Suricata 8 has set alone for transactions (the parser refuses the rest).
                if (op.cmd == FlowbitCmd::kSet && flow != nullptr && view != nullptr) {
                    flow->tx_bits.set(tx_bit_key(op.name_hash, *view));
                }
                break;
            case XbitTrack::kIpBoth:
                apply_host_op(op, host_key(op.name_hash, p.src), p.ts_ns);
                apply_host_op(op, host_key(op.name_hash, p.dst), p.ts_ns);
                break;
            default:
                apply_host_op(op, xbit_key(op, p), p.ts_ns);
                break;
        }
    }
}

uint64_t xbits_dropped() {
    return g_xbits_dropped.load(std::memory_order_relaxed);
}

void xbits_clear() {
    for (XbitSlot& s : xbit_table()) {
        s.key.store(0, std::memory_order_relaxed);
        s.expire_ns.store(0, std::memory_order_relaxed);
    }
    g_xbits_dropped.store(0, std::memory_order_relaxed);
}

}  // namespace picket::sensor::detect
