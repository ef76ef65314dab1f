// Capture files on disk (see pcap_file.h): the writer's file, the reader's bytes.
#include "io/pcap_file.h"

#include <cerrno>
#include <fstream>
#include <iterator>
#include <utility>
#include <vector>

#include "util/errno_map.h"

namespace mrc::io {

Result<std::unique_ptr<PcapWriter>, Error> PcapWriter::open(const std::string& path,
                                                            uint64_t max_bytes) {
  std::FILE* file = std::fopen(path.c_str(), "wb");
  if (file == nullptr) return Err{system_error("cannot create " + path, errno)};
  const auto header = wire::pcap_file_header();
  if (std::fwrite(header.data(), header.size(), 1, file) != 1) {
    std::fclose(file);
    return Err{system_error("cannot write " + path, errno)};
  }
  return std::unique_ptr<PcapWriter>(new PcapWriter(file, max_bytes));
}

PcapWriter::~PcapWriter() {
  if (file_ != nullptr) std::fclose(file_);
}

uint64_t PcapWriter::records() const {
  std::lock_guard lock(mutex_);
  return records_;
}

uint64_t PcapWriter::dropped() const {
  std::lock_guard lock(mutex_);
  return dropped_;
}

bool PcapWriter::write(uint64_t unix_ns, const UdpAddresses& a, std::span<const uint8_t> datagram) {
  std::lock_guard lock(mutex_);
  wire::UdpHeaderFields fields;
  fields.v6 = a.source.is_v6();
  fields.source = {a.source.bytes(), a.source.byte_count()};
  fields.destination = {a.destination.bytes(), a.destination.byte_count()};
  fields.source_port = a.source.port();
  fields.destination_port = a.destination.port();
  fields.tos = a.tos;
  fields.ip_id = ip_id_++;
  uint8_t header_bytes[wire::kPcapMaxHeaderBytes];
  const size_t header_length = wire::write_udp_headers(fields, datagram.size(), header_bytes);
  const size_t length = header_length + datagram.size();
  if (file_ == nullptr || length > wire::kPcapMaxRecordBytes ||
      bytes_ + wire::kPcapRecordHeaderBytes + length > max_bytes_) {
    ++dropped_;
    return false;
  }
  const auto record = wire::pcap_record_header(unix_ns, static_cast<uint32_t>(length));
  if (std::fwrite(record.data(), record.size(), 1, file_) != 1 ||
      std::fwrite(header_bytes, header_length, 1, file_) != 1 ||
      (!datagram.empty() && std::fwrite(datagram.data(), datagram.size(), 1, file_) != 1)) {
    std::fclose(file_);
    file_ = nullptr;
    ++dropped_;
    return false;
  }
  bytes_ += wire::kPcapRecordHeaderBytes + length;
  ++records_;
  // On disk at least every kFlushInterval of capture time, so the file can be read while the
  // program runs (as tcpdump -U's), without a system call per datagram.
  if (unix_ns - flushed_ns_ >= kFlushIntervalNs) {
    std::fflush(file_);
    flushed_ns_ = unix_ns;
  }
  return true;
}

Result<std::unique_ptr<wire::PcapReader>, Error> open_pcap(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Err{system_error("cannot open " + path, errno)};
  std::vector<uint8_t> file(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>{});
  return wire::PcapReader::parse(std::move(file), path);
}

}  // namespace mrc::io
