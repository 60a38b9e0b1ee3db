#include "sensor/capture/capture.h"

#include <pcap/pcap.h>

#include <algorithm>
#include <cstdio>
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
    if (pcap_ != nullptr) {
        pcap_close(static_cast<pcap_t*>(pcap_));
    }
}

void PcapFileReader::set_filter(const BpfFilter& filter) {
    filter_ = filter.empty() ? nullptr : &filter;
    active_ = nullptr;
    relinked_ = BpfFilter();
    if (pcap_ != nullptr && filter_ != nullptr) {
        if (filter_->linktype() == linktype_) {
            active_ = filter_;
        } else {
            relinked_ = BpfFilter(filter_->expression(), linktype_);
            active_ = &relinked_;
        }
    }
}

uint64_t PcapFileReader::packets_filtered() const {
    return filtered_;
}

bool PcapFileReader::open_next() {
    if (pcap_ != nullptr) {
        pcap_close(static_cast<pcap_t*>(pcap_));
        pcap_ = nullptr;
    }
    if (next_file_ >= files_.size()) {
        return false;
    }
    current_ = files_[next_file_++];
    pcap_t* p = open_file(current_, error_);
    if (p == nullptr) {
        return false;
    }
    pcap_ = p;
    linktype_ = pcap_datalink(p);
    offset_ = std::ftell(pcap_file(p));
    file_packets_ = 0;
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

ReadResult PcapFileReader::next(RawPacket& p) {
    if (!error_.empty()) {
        return ReadResult::kError;
    }
    for (;;) {
        if (pcap_ == nullptr) {
            if (!open_next()) {
                return error_.empty() ? ReadResult::kEof : ReadResult::kError;
            }
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
