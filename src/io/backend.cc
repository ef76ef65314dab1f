// Transmits formed from added datagrams, the batch contract every backend sends (backend.h).
#include "io/backend.h"

namespace mrc::io {

bool TransmitGather::joins(uint16_t source_port, const SocketAddress& to, size_t length) const {
  return open_.bytes == open_.count * open_.segment_bytes && source_port == open_.source_port &&
         to == open_.to && length <= open_.segment_bytes && open_.count < kMaxGsoSegments &&
         open_.bytes + length <= kMaxGsoBytes;
}

void TransmitGather::add(TransmitLink& link, uint16_t source_port, const SocketAddress& to,
                         size_t length, Instant now, TxOutcome& out) {
  link.written(length);
  if (open_.count > 0 && !joins(source_port, to, length)) {
    link.send(open_, now, out);  // the datagram just written stays, as the next transmit's first
    open_.count = 0;
  }
  if (open_.count == 0) open_ = Transmit{source_port, to, length, 0, 0};
  ++open_.count;
  open_.bytes += length;
}

void TransmitGather::flush(TransmitLink& link, Instant now, TxOutcome& out) {
  if (open_.count > 0) link.send(open_, now, out);
  open_.count = 0;
  link.kick(out);
}

}  // namespace mrc::io
