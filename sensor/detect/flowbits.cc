#include "sensor/detect/flowbits.h"

#include <algorithm>
#include <cstring>
#include <map>

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
}

FlowbitPool::FlowbitPool(uint32_t nbits, size_t max_stores, size_t chunk)
    : nwords_(std::max<uint32_t>(1, (nbits + 63) / 64)),
      max_stores_(max_stores),
      chunk_(std::max<size_t>(1, chunk)) {}

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

}  // namespace picket::sensor::detect
