-- Wireshark / tshark dissector for MRC (Multipath Reliable Connection, OCP MRC 1.0) as mrc
-- sends it: the BTH and the MRC extension headers of every opcode, field by field, and the
-- ICRC. docs/PROTOCOL.md section 1 is the layout this follows.
--
--   tshark -X lua_script:tools/wireshark/mrc.lua -r capture.pcap -Y mrc -V
--   scripts/install-dissector.sh      # copies it where Wireshark and tshark load plugins
--
-- It takes UDP port 4791 (RoCEv2's) from Wireshark's InfiniBand dissector, which shows MRC
-- opcodes as unknown, and recognises MRC on any other UDP port by its header and its ICRC
-- (mrc perf's client listens on 4807). The ICRC is checked as the UDP datapath writes it (a
-- CRC-32 over the datagram); a RoCEv2 ICRC (the xdp datapath's, over the masked IP and UDP
-- headers too) is shown but not checked here: `mrc decode` checks both.

local mrc = Proto("mrc", "Multipath Reliable Connection")

local opcodes = {
  [0xC6] = "WRITE_FIRST", [0xC7] = "WRITE_MIDDLE", [0xC8] = "WRITE_LAST", [0xC9] = "WRITE_LAST_IMM",
  [0xCA] = "WRITE_ONLY", [0xCB] = "WRITE_ONLY_IMM", [0xD1] = "ACK", [0xD8] = "ENDPOINT_REQUEST",
  [0xD9] = "ENDPOINT_RESPONSE", [0xDC] = "SACK", [0xDD] = "NACK", [0xDE] = "PROBE",
  [0xDF] = "KEY_OFFER",
}
-- Bytes after the BTH and before the ICRC of each control opcode (exact).
local control_bytes = { [0xD1] = 4, [0xD8] = 16, [0xD9] = 36, [0xDC] = 36, [0xDD] = 20, [0xDE] = 16,
                        [0xDF] = 96 }
local secure_modes = { [0] = "off", [1] = "auth", [2] = "encrypt" }
local nack_reasons = {
  [0x01] = "TRIMMED", [0x02] = "TRIMMED_LASTHOP", [0x06] = "NO_BITMAP", [0x07] = "NO_PKT_BUFFER",
  [0x0A] = "NO_RESOURCE", [0x0B] = "PSN_OOR_WINDOW", [0x19] = "UNEXP_EVENT",
}
local skip_modes = { [0] = "NONE", [1] = "SKIP_ONCE", [2] = "ALWAYS_SKIP" }
local endpoint_ops = { [0] = "PORT_STATUS_UPDATE", [1] = "EV_PROBE" }

local f = {
  opcode = ProtoField.uint8("mrc.opcode", "OpCode", base.HEX, opcodes),
  se = ProtoField.bool("mrc.se", "Solicited event"),
  m = ProtoField.bool("mrc.m", "Migration request"),
  pad = ProtoField.uint8("mrc.pad", "Pad count"),
  tver = ProtoField.uint8("mrc.tver", "Transport version"),
  pkey = ProtoField.uint16("mrc.pkey", "Partition key", base.HEX),
  dqpn = ProtoField.uint24("mrc.dqpn", "Destination QP", base.HEX),
  a = ProtoField.bool("mrc.a", "Acknowledge request"),
  r = ProtoField.bool("mrc.r", "Reserved flag R"),
  rtx = ProtoField.bool("mrc.rtx", "Retransmission"),
  ts = ProtoField.bool("mrc.ts", "Timestamp present"),
  s = ProtoField.bool("mrc.s", "Secure packet (SECH follows the BTH, a tag precedes the ICRC)"),
  epoch = ProtoField.uint16("mrc.sech.epoch", "Key epoch"),
  counter = ProtoField.uint64("mrc.sech.counter", "Packet counter"),
  tag = ProtoField.bytes("mrc.tag", "AES-GCM tag"),
  ko_sqpn = ProtoField.uint24("mrc.koeth.source_qp", "Source QP", base.HEX),
  ko_mode = ProtoField.uint8("mrc.koeth.mode", "Secure mode", base.DEC, secure_modes),
  ko_h = ProtoField.bool("mrc.koeth.holds_yours", "Holds the receiver's offer (H)"),
  ko_r = ProtoField.bool("mrc.koeth.reply", "Reply (R)"),
  ko_key_id = ProtoField.bytes("mrc.koeth.key_id", "Pre-shared key id"),
  ko_public = ProtoField.bytes("mrc.koeth.public_key", "X25519 public key"),
  ko_nonce = ProtoField.bytes("mrc.koeth.nonce", "Nonce"),
  ko_proof = ProtoField.bytes("mrc.koeth.proof", "Proof (HMAC-SHA256)"),
  psn = ProtoField.uint24("mrc.psn", "PSN"),
  rqmsn = ProtoField.uint16("mrc.meth.rqmsn", "RQ message sequence number"),
  msn = ProtoField.uint16("mrc.meth.msn", "Message sequence number"),
  tx_ts = ProtoField.uint16("mrc.tx_timestamp", "Transmit timestamp (64 ns units)"),
  tsr = ProtoField.bool("mrc.tsr", "Service-time request"),
  ftype = ProtoField.uint8("mrc.ftype", "Timestamp format"),
  va = ProtoField.uint64("mrc.reth.va", "Virtual address", base.HEX),
  rkey = ProtoField.uint32("mrc.reth.rkey", "Remote key", base.HEX),
  dmalen = ProtoField.uint32("mrc.reth.dmalen", "DMA length (message)"),
  imm = ProtoField.uint32("mrc.imm", "Immediate", base.HEX),
  payload = ProtoField.bytes("mrc.payload", "Payload"),
  skip = ProtoField.uint8("mrc.sack.m", "Skip mode", base.DEC, skip_modes),
  pr = ProtoField.bool("mrc.sack.pr", "Probe response"),
  ack_off = ProtoField.int16("mrc.sack.ack_psn_offset", "Trigger PSN offset"),
  entropy = ProtoField.uint32("mrc.entropy", "Entropy (EV)"),
  spdcid = ProtoField.uint16("mrc.spdcid", "Source PDC id"),
  dpdcid = ProtoField.uint16("mrc.dpdcid", "Destination PDC id"),
  cack = ProtoField.uint24("mrc.sack.cack_psn", "Cumulative PSN"),
  cc_type = ProtoField.uint8("mrc.cc_type", "CC type"),
  cc_flags = ProtoField.uint8("mrc.cc_flags", "CC flags (SACK hold, 1.024 us units)"),
  mpr = ProtoField.uint8("mrc.sack.mpr", "Receiver window (128 PSNs)"),
  sack_off = ProtoField.int16("mrc.sack.offset", "Bitmap offset"),
  bitmap = ProtoField.uint64("mrc.sack.bitmap", "SACK bitmap", base.HEX),
  echoed_ts = ProtoField.uint16("mrc.echoed_timestamp", "Echoed timestamp"),
  ooo = ProtoField.uint16("mrc.cc.ooo_count", "Out-of-order count"),
  rc = ProtoField.bool("mrc.cc.rc", "r_c"),
  pen = ProtoField.uint8("mrc.cc.rcv_cwnd_pen", "Receiver back-pressure"),
  rcvd = ProtoField.uint24("mrc.cc.received_bytes", "Received bytes (mod 2^24)"),
  reason = ProtoField.uint8("mrc.nack.reason", "NACK reason", base.HEX, nack_reasons),
  vendor = ProtoField.uint8("mrc.vendor_info", "Vendor info"),
  nack_psn = ProtoField.uint24("mrc.nack.psn", "NACKed PSN"),
  probe_id = ProtoField.uint16("mrc.probe.id", "Probe id"),
  ep_op = ProtoField.uint8("mrc.ep.op", "Endpoint operation", base.DEC, endpoint_ops),
  port_mask = ProtoField.uint32("mrc.ep.port_status_mask", "Port status mask", base.HEX),
  request_id = ProtoField.uint32("mrc.ep.request_id", "Request id"),
  service_ns = ProtoField.uint32("mrc.ep.service_time_ns", "Service time (ns)"),
  syndrome = ProtoField.uint8("mrc.aeth.syndrome", "Syndrome", base.HEX),
  aeth_msn = ProtoField.uint24("mrc.aeth.msn", "MSN"),
  icrc = ProtoField.uint32("mrc.icrc", "ICRC", base.HEX),
  icrc_status = ProtoField.string("mrc.icrc.status", "ICRC status"),
}
local field_list = {}
for _, field in pairs(f) do table.insert(field_list, field) end
mrc.fields = field_list

local e_bad_icrc = ProtoExpert.new("mrc.icrc.bad", "ICRC is neither the UDP datapath's CRC-32 nor checked as RoCEv2",
                                   expert.group.CHECKSUM, expert.severity.NOTE)
local e_length = ProtoExpert.new("mrc.length.bad", "Datagram length does not fit the opcode",
                                 expert.group.MALFORMED, expert.severity.ERROR)
mrc.experts = { e_bad_icrc, e_length }

mrc.prefs.check_icrc = Pref.bool("Check the ICRC", true, "CRC-32 over the datagram, as the UDP datapath seals it")

-- CRC-32 (IEEE 802.3, reflected), as zlib's crc32.
local crc_table = {}
for i = 0, 255 do
  local c = i
  for _ = 1, 8 do
    if bit32.band(c, 1) == 1 then c = bit32.bxor(0xEDB88320, bit32.rshift(c, 1)) else c = bit32.rshift(c, 1) end
  end
  crc_table[i] = c
end
local function crc32(tvb, offset, length)
  local reg = 0xFFFFFFFF
  local bytes = tvb:range(offset, length):bytes()
  for i = 0, length - 1 do
    reg = bit32.bxor(crc_table[bit32.band(bit32.bxor(reg, bytes:get_index(i)), 0xFF)], bit32.rshift(reg, 8))
  end
  return bit32.bnot(reg)
end

-- The header bytes after the BTH of a data packet, or nil for a control opcode.
local function data_header_bytes(op, ts)
  if op < 0xC6 or op > 0xCB then return nil end
  local n = 4 + 16
  if ts then n = n + 4 end
  if op == 0xC9 or op == 0xCB then n = n + 4 end
  return n
end

-- Whether `len` bytes starting with opcode `op` can be an MRC datagram: nil if not, else the
-- header bytes after the BTH.
local function shape(tvb)
  local len = tvb:len()
  if len < 16 then return nil end
  local op = tvb(0, 1):uint()
  if opcodes[op] == nil or bit32.band(tvb(1, 1):uint(), 0x0F) ~= 0 then return nil end
  local data = data_header_bytes(op, bit32.btest(tvb(8, 1):uint(), 0x10))
  if data ~= nil then
    if len < 12 + data + 4 or len > 12 + data + 9000 + 4 then return nil end
    return data
  end
  if len ~= 12 + control_bytes[op] + 4 then return nil end
  return control_bytes[op]
end

local function add_bth(tree, tvb)
  local t = tree:add(mrc, tvb(0, 12), "Base Transport Header")
  t:add(f.opcode, tvb(0, 1))
  t:add(f.se, tvb(1, 1):bitfield(1, 1) == 1)
  t:add(f.m, tvb(1, 1):bitfield(0, 1) == 1)
  t:add(f.pad, tvb(1, 1), tvb(1, 1):bitfield(2, 2))
  t:add(f.tver, tvb(1, 1), tvb(1, 1):bitfield(4, 4))
  t:add(f.pkey, tvb(2, 2))
  t:add(f.dqpn, tvb(5, 3))
  t:add(f.a, tvb(8, 1):bitfield(0, 1) == 1)
  t:add(f.r, tvb(8, 1):bitfield(1, 1) == 1)
  t:add(f.rtx, tvb(8, 1):bitfield(2, 1) == 1)
  t:add(f.ts, tvb(8, 1):bitfield(3, 1) == 1)
  t:add(f.s, tvb(8, 1):bitfield(4, 1) == 1)
  t:add(f.psn, tvb(9, 3))
end

-- A secure packet (BTH S flag, docs/PROTOCOL.md 1.12) is dissected through its unprotected
-- view: BTH, extension headers and payload as on the wire, without SECH and tag, as a new tab.
-- Returns the tvb to dissect the headers from, or nil if the packet is too short to hold them.
local function secure(tvb)
  return tvb:len() >= 9 and bit32.btest(tvb(8, 1):uint(), 0x08)
end
local function view_of(tvb)
  if not secure(tvb) then return tvb end
  if tvb:len() < 12 + 8 + 16 + 4 then return nil end
  local bytes = tvb(0, 12):bytes()
  bytes:append(tvb(20, tvb:len() - 20 - 20):bytes())
  bytes:append(ByteArray.new("00000000"))
  return bytes:tvb("MRC unprotected view")
end
local function add_security(tree, tvb)
  local h = tree:add(mrc, tvb(12, 8), "SECH (secure packet)")
  h:add(f.epoch, tvb(12, 2))
  h:add(f.counter, tvb(14, 6), UInt64.new(tvb(16, 4):uint(), tvb(14, 2):uint()))
  tree:add(f.tag, tvb(tvb:len() - 20, 16))
end

local function add_data(tree, tvb, op)
  local at = 12
  local h = tree:add(mrc, tvb(at, 4), "METH")
  h:add(f.rqmsn, tvb(at, 2)); h:add(f.msn, tvb(at + 2, 2)); at = at + 4
  if tvb(8, 1):bitfield(3, 1) == 1 then
    h = tree:add(mrc, tvb(at, 4), "TSETH")
    h:add(f.tx_ts, tvb(at, 2)); h:add(f.tsr, tvb(at + 2, 1):bitfield(0, 1) == 1)
    h:add(f.ftype, tvb(at + 3, 1), bit32.band(tvb(at + 3, 1):uint(), 0x0F)); at = at + 4
  end
  h = tree:add(mrc, tvb(at, 16), "RETH")
  h:add(f.va, tvb(at, 8)); h:add(f.rkey, tvb(at + 8, 4)); h:add(f.dmalen, tvb(at + 12, 4)); at = at + 16
  if op == 0xC9 or op == 0xCB then tree:add(f.imm, tvb(at, 4)); at = at + 4 end
  local payload = tvb:len() - 4 - at
  if payload > 0 then tree:add(f.payload, tvb(at, payload)) end
end

local function add_sack(tree, tvb)
  local h = tree:add(mrc, tvb(12, 28), "SETH")
  h:add(f.skip, tvb(13, 1), tvb(13, 1):bitfield(1, 2)); h:add(f.pr, tvb(13, 1):bitfield(6, 1) == 1)
  h:add(f.ack_off, tvb(14, 2)); h:add(f.entropy, tvb(16, 4)); h:add(f.spdcid, tvb(20, 2)); h:add(f.dpdcid, tvb(22, 2))
  h:add(f.cack, tvb(25, 3)); h:add(f.cc_type, tvb(28, 1), tvb(28, 1):bitfield(0, 4))
  h:add(f.cc_flags, tvb(28, 1), tvb(28, 1):bitfield(4, 4)); h:add(f.mpr, tvb(29, 1)); h:add(f.sack_off, tvb(30, 2))
  h:add(f.bitmap, tvb(32, 8))
  h = tree:add(mrc, tvb(40, 8), "CC_STATE")
  h:add(f.echoed_ts, tvb(40, 2)); h:add(f.ooo, tvb(42, 2), bit32.band(tvb(42, 2):uint(), 0x7FFF))
  h:add(f.rc, tvb(44, 1):bitfield(0, 1) == 1); h:add(f.pen, tvb(44, 1), bit32.band(tvb(44, 1):uint(), 0x7F))
  h:add(f.rcvd, tvb(45, 3))
end

local function add_nack(tree, tvb)
  local h = tree:add(mrc, tvb(12, 20), "NETH")
  h:add(f.reason, tvb(14, 1)); h:add(f.vendor, tvb(15, 1)); h:add(f.entropy, tvb(16, 4)); h:add(f.spdcid, tvb(20, 2))
  h:add(f.dpdcid, tvb(22, 2)); h:add(f.nack_psn, tvb(25, 3)); h:add(f.cc_type, tvb(28, 1), tvb(28, 1):bitfield(0, 4))
  h:add(f.cc_flags, tvb(28, 1), tvb(28, 1):bitfield(4, 4)); h:add(f.echoed_ts, tvb(30, 2))
end

local function add_probe(tree, tvb)
  local h = tree:add(mrc, tvb(12, 16), "PETH")
  h:add(f.vendor, tvb(15, 1)); h:add(f.probe_id, tvb(16, 2)); h:add(f.spdcid, tvb(20, 2)); h:add(f.dpdcid, tvb(22, 2))
  h:add(f.tx_ts, tvb(24, 2)); h:add(f.tsr, tvb(26, 1):bitfield(0, 1) == 1)
  h:add(f.ftype, tvb(27, 1), bit32.band(tvb(27, 1):uint(), 0x0F))
end

local function add_endpoint(tree, tvb, op)
  if op == 0xD8 then
    local h = tree:add(mrc, tvb(12, 16), "ERTH")
    h:add(f.ep_op, tvb(13, 1), bit32.band(tvb(13, 1):uint(), 0x03)); h:add(f.vendor, tvb(15, 1))
    h:add(f.port_mask, tvb(16, 4)); h:add(f.request_id, tvb(20, 4)); h:add(f.tx_ts, tvb(24, 2))
    h:add(f.tsr, tvb(26, 1):bitfield(0, 1) == 1); h:add(f.ftype, tvb(27, 1), bit32.band(tvb(27, 1):uint(), 0x0F))
  else
    local h = tree:add(mrc, tvb(12, 36), "EETH")
    h:add(f.ep_op, tvb(13, 1), tvb(13, 1):bitfield(2, 2)); h:add(f.port_mask, tvb(16, 4))
    h:add(f.request_id, tvb(20, 4)); h:add(f.service_ns, tvb(24, 4)); h:add(f.echoed_ts, tvb(40, 2))
  end
end

-- KEY OFFER (mrc's in-band key agreement, PROTOCOL.md 1.13).
local function add_key_offer(tree, tvb)
  local h = tree:add(mrc, tvb(12, 96), "KOETH (key offer)")
  h:add(f.ko_sqpn, tvb(13, 3)); h:add(f.ko_mode, tvb(16, 1))
  h:add(f.ko_h, tvb(17, 1):bitfield(7, 1) == 1); h:add(f.ko_r, tvb(17, 1):bitfield(6, 1) == 1)
  h:add(f.ko_key_id, tvb(20, 8)); h:add(f.ko_public, tvb(28, 32)); h:add(f.ko_nonce, tvb(60, 16))
  h:add(f.ko_proof, tvb(76, 32))
end

local function add_icrc(tree, tvb)
  local at = tvb:len() - 4
  tree:add(f.icrc, tvb(at, 4))
  if not mrc.prefs.check_icrc then return end
  if crc32(tvb, 0, at) == tvb(at, 4):uint() then
    tree:add(f.icrc_status, "good (UDP datapath CRC-32)")
  else
    tree:add(f.icrc_status, "not the UDP datapath's CRC-32 (a RoCEv2 ICRC, or corrupt)"):add_proto_expert_info(e_bad_icrc)
  end
end

function mrc.dissector(tvb, pinfo, tree)
  local op = tvb(0, 1):uint()
  pinfo.cols.protocol = "MRC"
  local name = opcodes[op] or string.format("0x%02X", op)
  local root = tree:add(mrc, tvb(), "MRC " .. name)
  local body = view_of(tvb)
  if body == nil or shape(body) == nil then
    root:add_proto_expert_info(e_length)
    return tvb:len()
  end
  add_bth(root, tvb)
  if secure(tvb) then add_security(root, tvb) end
  if data_header_bytes(op, false) ~= nil then add_data(root, body, op)
  elseif op == 0xDC then add_sack(root, body)
  elseif op == 0xDD then add_nack(root, body)
  elseif op == 0xDE then add_probe(root, body)
  elseif op == 0xD8 or op == 0xD9 then add_endpoint(root, body, op)
  elseif op == 0xDF then add_key_offer(root, body)
  elseif op == 0xD1 then
    local h = root:add(mrc, body(12, 4), "AETH")
    h:add(f.syndrome, body(12, 1)); h:add(f.aeth_msn, body(13, 3))
  end
  add_icrc(root, tvb)
  pinfo.cols.info = string.format("%s QP 0x%06X PSN %d%s", name, tvb(5, 3):uint(), tvb(9, 3):uint(),
                                  (tvb(8, 1):bitfield(2, 1) == 1) and " (retransmission)" or "")
  return tvb:len()
end

-- Any other UDP port: MRC if the header has an MRC shape and the ICRC is the UDP datapath's.
local function heuristic(tvb, pinfo, tree)
  local body = view_of(tvb)
  if body == nil or shape(body) == nil then return false end
  local at = tvb:len() - 4
  if crc32(tvb, 0, at) ~= tvb(at, 4):uint() then return false end
  mrc.dissector(tvb, pinfo, tree)
  return true
end

DissectorTable.get("udp.port"):add(4791, mrc)
mrc:register_heuristic("udp", heuristic)
