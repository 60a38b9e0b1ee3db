#include "sensor/capture/capture.h"

#include <fcntl.h>
#include <pcap/pcap.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <system_error>

namespace picket::sensor::capture {

namespace {

// libpcap's open errors often start with "PATH: " already; keep the path once in our message.
std::string open_error(const std::string& path, const char* errbuf) {
    std::string reason = errbuf;
    const std::string prefix = path + ": ";
    if (reason.compare(0, prefix.size(), prefix) == 0) {
        reason.erase(0, prefix.size());
    }
    return path + ": " + reason;
}

pcap_t* open_file(const std::string& path, std::string& error) {
    char errbuf[PCAP_ERRBUF_SIZE] = {};
    pcap_t* p =
        pcap_open_offline_with_tstamp_precision(path.c_str(), PCAP_TSTAMP_PRECISION_NANO, errbuf);
    if (p == nullptr) {
        error = open_error(path, errbuf);
    }
    return p;
}

std::vector<std::string> expand(const std::vector<std::string>& paths) {
    namespace fs = std::filesystem;
    std::vector<std::string> files;
    for (const auto& path : paths) {
        std::error_code ec;
        if (!fs::is_directory(path, ec)) {
            files.push_back(path);  // missing files are reported by the open below
            continue;
        }
        std::vector<std::string> entries;
        for (fs::directory_iterator it(path, ec), end; !ec && it != end; it.increment(ec)) {
            std::error_code type_ec;
            if (it->is_regular_file(type_ec)) {
                entries.push_back(it->path().string());
            }
        }
        if (ec) {
            throw CaptureError(path + ": cannot list directory: " + ec.message());
        }
        if (entries.empty()) {
            throw CaptureError(path + ": directory holds no capture files");
        }
        std::sort(entries.begin(), entries.end());
        files.insert(files.end(), entries.begin(), entries.end());
    }
    if (files.empty()) {
        throw CaptureError("no capture files given");
    }
    return files;
}

constexpr uint32_t kMagicUsec = 0xa1b2c3d4;
constexpr uint32_t kMagicNsec = 0xa1b23c4d;
constexpr uint32_t kMaxCaplen = 262144;  // libpcap's limit for every link type we decode
constexpr size_t kFileHeaderLen = 24;
constexpr size_t kRecordHeaderLen = 16;

uint32_t load32(const uint8_t* p, bool swapped) {
    uint32_t v;
    std::memcpy(&v, p, 4);
    return swapped ? __builtin_bswap32(v) : v;
}

// The pcap header stores a LINKTYPE_ value; the few that differ from the DLT_ value libpcap
// reports are mapped (only LINKTYPE_RAW matters for what we decode).
int linktype_to_dlt(uint32_t linktype) {
    uint32_t lt = linktype & 0xffff;  // upper bits carry FCS information
    if (lt == 101) {
        return DLT_RAW;
    }
    return static_cast<int>(lt);
}

}  // namespace

PcapFileReader::PcapFileReader(std::vector<std::string> paths) : files_(expand(paths)) {
    // Check every file up front so that a bad one fails the start, not the middle of a run.
    for (const auto& file : files_) {
        std::string error;
        pcap_t* p = open_file(file, error);
        if (p == nullptr) {
            throw CaptureError(error);
        }
        pcap_close(p);
    }
}

PcapFileReader::~PcapFileReader() {
    unmap();
    if (pcap_ != nullptr) {
        pcap_close(static_cast<pcap_t*>(pcap_));
    }
}

void PcapFileReader::set_filter(const BpfFilter& filter) {
    filter_ = filter.empty() ? nullptr : &filter;
    active_ = nullptr;
    relinked_ = BpfFilter();
    if ((pcap_ != nullptr || map_ != nullptr) && filter_ != nullptr) {
        if (filter_->linktype() == linktype_) {
            active_ = filter_;
        } else {
            relinked_ = BpfFilter(filter_->expression(), linktype_);
            active_ = &relinked_;
        }
    }
}

void PcapFileReader::rewind() {
    if (pcap_ != nullptr) {
        pcap_close(static_cast<pcap_t*>(pcap_));
        pcap_ = nullptr;
    }
    unmap();
    next_file_ = 0;
}

uint64_t PcapFileReader::packets_filtered() const {
    return filtered_;
}

void PcapFileReader::unmap() {
    if (map_ != nullptr) {
        munmap(const_cast<uint8_t*>(map_), map_len_);
        map_ = nullptr;
        map_len_ = 0;
    }
}

bool PcapFileReader::open_mapped(const std::string& path) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return false;
    }
    struct stat st {};
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
        static_cast<size_t>(st.st_size) < kFileHeaderLen) {
        ::close(fd);
        return false;
    }
    uint8_t hdr[kFileHeaderLen];
    if (::pread(fd, hdr, sizeof(hdr), 0) != static_cast<ssize_t>(sizeof(hdr))) {
        ::close(fd);
        return false;
    }
    uint32_t magic;
    std::memcpy(&magic, hdr, 4);
    bool swapped = false;
    if (magic == __builtin_bswap32(kMagicUsec) || magic == __builtin_bswap32(kMagicNsec)) {
        swapped = true;
        magic = __builtin_bswap32(magic);
    }
    if (magic != kMagicUsec && magic != kMagicNsec) {
        ::close(fd);
        return false;  // pcapng or something libpcap should judge
    }
    void* m = mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
    ::close(fd);
    if (m == MAP_FAILED) {
        return false;
    }
    madvise(m, static_cast<size_t>(st.st_size), MADV_SEQUENTIAL);
    map_ = static_cast<const uint8_t*>(m);
    map_len_ = static_cast<size_t>(st.st_size);
    swapped_ = swapped;
    nsec_ = magic == kMagicNsec;
    linktype_ = linktype_to_dlt(load32(hdr + 20, swapped));
    offset_ = kFileHeaderLen;
    return true;
}

// Same checks and messages as libpcap's pcap reader, so errors read alike on both paths.
ReadResult PcapFileReader::next_mapped(RawPacket& p) {
    const size_t off = static_cast<size_t>(offset_);
    if (off == map_len_) {
        return ReadResult::kEof;
    }
    const size_t left = map_len_ - off;
    if (left < kRecordHeaderLen) {
        error_ = current_ + ": truncated or corrupt capture at byte offset " +
                 std::to_string(offset_) + " after packet " + std::to_string(file_packets_) +
                 ": truncated dump file; tried to read " + std::to_string(kRecordHeaderLen) +
                 " header bytes, only got " + std::to_string(left);
        damaged_ = true;
        return ReadResult::kError;
    }
    const uint8_t* rec = map_ + off;
    const uint32_t sec = load32(rec, swapped_);
    const uint32_t frac = load32(rec + 4, swapped_);
    const uint32_t caplen = load32(rec + 8, swapped_);
    const uint32_t wirelen = load32(rec + 12, swapped_);
    if (caplen > kMaxCaplen) {
        error_ = current_ + ": truncated or corrupt capture at byte offset " +
                 std::to_string(offset_) + " after packet " + std::to_string(file_packets_) +
                 ": invalid packet capture length " + std::to_string(caplen) +
                 ", bigger than maximum of " + std::to_string(kMaxCaplen);
        damaged_ = true;
        return ReadResult::kError;
    }
    if (left - kRecordHeaderLen < caplen) {
        error_ = current_ + ": truncated or corrupt capture at byte offset " +
                 std::to_string(offset_) + " after packet " + std::to_string(file_packets_) +
                 ": truncated dump file; tried to read " + std::to_string(caplen) +
                 " captured bytes, only got " + std::to_string(left - kRecordHeaderLen);
        damaged_ = true;
        return ReadResult::kError;
    }
    p.data = rec + kRecordHeaderLen;
    p.caplen = caplen;
    p.wirelen = wirelen < caplen ? caplen : wirelen;
    p.ts_ns = static_cast<int64_t>(sec) * 1000000000 +
              (nsec_ ? static_cast<int64_t>(frac) : static_cast<int64_t>(frac) * 1000);
    p.linktype = linktype_;
    offset_ = static_cast<int64_t>(off + kRecordHeaderLen + caplen);
    return ReadResult::kOk;
}

bool PcapFileReader::open_next() {
    if (pcap_ != nullptr) {
        pcap_close(static_cast<pcap_t*>(pcap_));
        pcap_ = nullptr;
    }
    unmap();
    if (next_file_ >= files_.size()) {
        return false;
    }
    current_ = files_[next_file_++];
    file_packets_ = 0;
    if (!open_mapped(current_)) {
        pcap_t* p = open_file(current_, error_);
        if (p == nullptr) {
            return false;
        }
        pcap_ = p;
        linktype_ = pcap_datalink(p);
        offset_ = std::ftell(pcap_file(p));
    }
    active_ = nullptr;
    if (filter_ != nullptr) {
        if (filter_->linktype() == linktype_) {
            active_ = filter_;
        } else {
            try {
                relinked_ = BpfFilter(filter_->expression(), linktype_);
                active_ = &relinked_;
            } catch (const CaptureError& e) {
                error_ = current_ + ": " + e.what();
                return false;
            }
        }
    }
    return true;
}

bool PcapFileReader::skip_damaged(std::string* what) {
    if (!damaged_ || error_.empty()) {
        return false;
    }
    *what = std::move(error_);
    error_.clear();
    damaged_ = false;
    return true;
}

ReadResult PcapFileReader::next(RawPacket& p) {
    if (!error_.empty()) {
        return ReadResult::kError;
    }
    for (;;) {
        if (pcap_ == nullptr && map_ == nullptr) {
            if (!open_next()) {
                return error_.empty() ? ReadResult::kEof : ReadResult::kError;
            }
        }
        if (map_ != nullptr) {
            ReadResult r = next_mapped(p);
            if (r == ReadResult::kEof) {
                unmap();
                continue;
            }
            if (r == ReadResult::kError) {
                unmap();
                return r;
            }
            ++file_packets_;
            ++packets_read_;
            bytes_read_ += p.caplen;
            p.pcap_cnt = packets_read_;
            if (active_ != nullptr && !active_->matches(p)) {
                ++filtered_;
                continue;
            }
            return ReadResult::kOk;
        }
        auto* handle = static_cast<pcap_t*>(pcap_);
        pcap_pkthdr* hdr = nullptr;
        const u_char* data = nullptr;
        const int rc = pcap_next_ex(handle, &hdr, &data);
        if (rc == PCAP_ERROR_BREAK) {  // end of this file
            pcap_close(handle);
            pcap_ = nullptr;
            continue;
        }
        if (rc != 1) {
            error_ = current_ + ": truncated or corrupt capture at byte offset " +
                     std::to_string(offset_) + " after packet " + std::to_string(file_packets_) +
                     ": " + pcap_geterr(handle);
            pcap_close(handle);
            pcap_ = nullptr;
            damaged_ = true;
            return ReadResult::kError;
        }
        offset_ = std::ftell(pcap_file(handle));
        ++file_packets_;
        ++packets_read_;
        bytes_read_ += hdr->caplen;
        p.data = data;
        p.caplen = hdr->caplen;
        p.wirelen = hdr->len;
        // Opened with nanosecond precision: tv_usec holds nanoseconds.
        p.ts_ns = static_cast<int64_t>(hdr->ts.tv_sec) * 1000000000 + hdr->ts.tv_usec;
        p.linktype = linktype_;
        p.pcap_cnt = packets_read_;
        if (active_ != nullptr && !active_->matches(p)) {
            ++filtered_;
            continue;
        }
        return ReadResult::kOk;
    }
}

}  // namespace picket::sensor::capture
