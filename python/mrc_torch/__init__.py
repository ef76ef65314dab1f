"""torch.distributed backend "mrc": collectives over MRC, sprayed over every plane.

    import mrc_torch                      # registers the backend
    import torch.distributed as dist
    dist.init_process_group("mrc", rank=rank, world_size=world)   # MASTER_ADDR/PORT, or init_method
    dist.all_reduce(tensor)
    mrc_torch.plane_stats()               # per-plane counters of this rank
    mrc_torch.set_plane_up(2, False)      # plane 2 of this rank fails; training goes on

Each rank opens its own mrc context over its host's planes (one address per plane; the same
number of planes on every rank) and connects to every other rank through the store torch gives
the backend. Environment (read when a group is created):

    MRC_PLANES        this host's plane addresses, comma-separated
                      (default 127.0.0.1,127.0.0.2,127.0.0.3,127.0.0.4: loopback planes)
    MRC_PORT          UDP receive port of local rank 0 (default 4791); local rank i of group g
                      uses the MRC_THREADS ports from MRC_PORT + (g * LOCAL_WORLD_SIZE + i) * MRC_THREADS
    MRC_EV_PORT_BASE  first UDP source port of the EVs (default 20000); each rank and group takes
                      its own range of MRC_THREADS * ev_source_ports(planes) ports (320 per
                      thread for 4 planes) above it
    MRC_THREADS       engine threads per rank (default 1, at most 16): the rank's queue pairs
                      (one per peer) are spread over them, each thread with its own ports
    MRC_CHUNK_BYTES   staging chunk size (default 0: 1 MiB up to 8 ranks, 512 KiB up to 16,
                      else 256 KiB, with 8 slots); MRC_SLOTS staging slots (default 8)
    MRC_MTU           payload bytes per packet (default 4096; 8192 suits 9000-byte links)
    MRC_BACKEND       datapath: udp (default) or xdp (AF_XDP; root; one rank per interface)
    MRC_PATH_POLICY   how each queue pair chooses among its GOOD EVs: p2c (default, the learned
                      score policy), rules (MRC's own), oblivious, reps, health or hedge
    MRC_SECURE        secure mode of the rank's queue pairs (every rank alike): off (default),
                      auth (an AES-GCM tag on every packet) or encrypt (payloads encrypted too)
    MRC_KEY_FILE      secure mode's pre-shared key, the same file on every rank (hex digits:
                      openssl rand -hex 32 > FILE; chmod 600 FILE); each queue pair's keys come
                      from a key exchange it authenticates
    MRC_SRV6_PATHS    SRv6 uSID path mode (IPv6 planes, each a locator): the paths' uSIDs,
                      e.g. 200,201; each EV's packets go through its path (default: ECMP mode)
    MRC_BUSY_POLL_US  after work, ask the sockets without sleeping for this long (default 0)
    MRC_GSO           batched UDP send and receive: on (default) or off
    MRC_METRICS_PORT  serve the rank's Prometheus metrics at http://MRC_METRICS_BIND:PORT/metrics,
                      PORT being MRC_METRICS_PORT + the rank's slot (as for MRC_PORT; 0: a free
                      port); MRC_METRICS_BIND the address (default 127.0.0.1)
    MRC_PCAP          write every datagram the rank sends and receives to this pcap file (%p:
                      the process id, so each rank writes its own); MRC_PCAP_MAX_MIB its budget
                      (default 256)
    The variables above from MRC_PLANES to here are host settings: the table every front door of
    mrc shares (src/host/options.h), each refused with its name when its value is bad.
    MRC_TIMEOUT_S     a call that makes no progress for this long fails (default: the timeout
                      given to init_process_group, 30 min); a wait without progress is
                      reported on stderr after 5 s, 10 s, 20 s, ... saying what it waits for
    MRC_PEER_TIMEOUT_S  a rank that stops answering for this long is declared gone (default 8;
                      retries double, so the real bound is the next step up: 8.6 s). Every rank
                      then fails, naming it, within a second more, whether or not it had
                      traffic to that rank
    LOCAL_RANK, LOCAL_WORLD_SIZE   set by torchrun; default: the rank and world size, which
                      gives every rank of a single-host run its own ports
"""

import datetime
import os

import torch.distributed as dist

from . import _C

ProcessGroupMrc = _C.ProcessGroupMrc
ev_source_ports = _C.ev_source_ports

DEFAULT_PLANES = "127.0.0.1,127.0.0.2,127.0.0.3,127.0.0.4"

_groups_created = 0  # groups this process has created: each gets its own ports


def _env_number(name, default, kind, what):
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    try:
        return kind(value)
    except ValueError:
        raise ValueError(f"mrc: {name}={value!r} is not {what}") from None


def _env_int(name, default):
    return _env_number(name, default, int, "an integer")


def _env_float(name, default):
    return _env_number(name, default, float, "a number")


def _host_settings():
    """The host settings set in the environment: MRC_ and a key of the table every front door
    of mrc shares (src/host/options.h), such as MRC_PLANES or MRC_METRICS_PORT."""
    settings = {key: os.environ[var] for key, var in _C.host_settings() if os.environ.get(var, "") != ""}
    settings.setdefault("planes", DEFAULT_PLANES)
    return settings


def _create(options, pg_options=None):
    """Creator for torch.distributed (extended API): one ProcessGroupMrc per group."""
    global _groups_created
    if pg_options is not None:
        raise RuntimeError("mrc: the backend takes no pg_options; use the MRC_* environment")
    if not dist.is_initialized():
        _groups_created = 0  # a new default group: destroy_process_group() freed every port
    ranks = list(options.global_ranks_in_group)
    global_rank = ranks[options.group_rank] if ranks else options.group_rank
    world = dist.get_world_size() if dist.is_initialized() else options.group_size
    local_rank = _env_int("LOCAL_RANK", global_rank)
    local_world = max(_env_int("LOCAL_WORLD_SIZE", world), local_rank + 1)
    slot = _groups_created * local_world + local_rank  # unique per process and group on a host
    timeout = options.timeout
    if not isinstance(timeout, datetime.timedelta):
        timeout = datetime.timedelta(seconds=float(timeout))
    timeout_s = os.environ.get("MRC_TIMEOUT_S")
    if timeout_s:
        timeout = datetime.timedelta(seconds=float(timeout_s))
    pg = ProcessGroupMrc(
        options.store,
        options.group_rank,
        options.group_size,
        host=_host_settings(),
        slot=slot,
        timeout=timeout,
        chunk_bytes=_env_int("MRC_CHUNK_BYTES", 0),
        slots=_env_int("MRC_SLOTS", 8),
        mtu=_env_int("MRC_MTU", 0),
        path_policy=os.environ.get("MRC_PATH_POLICY", "p2c"),
        peer_timeout=datetime.timedelta(seconds=_env_float("MRC_PEER_TIMEOUT_S", 8.0)),
    )
    _groups_created += 1
    return pg


def _group(group):
    pg = dist.distributed_c10d._get_default_group() if group is None else group
    if not isinstance(pg, ProcessGroupMrc):
        raise TypeError(f"mrc: {type(pg).__name__} is not an mrc process group")
    return pg


def plane_stats(group=None):
    """This rank's per-plane counters (a list of dicts, one per plane): plane, address, up,
    packets_sent, bytes_sent, packets_received, bytes_received, send_errors."""
    pg = _group(group)
    return [pg.plane_stats(p) for p in range(pg.planes)]


def set_plane_up(plane, up, group=None):
    """Takes plane `plane` of this rank down (up=False) or back up, as if its link failed."""
    _group(group).set_plane_up(plane, up)


if "MRC" not in dist.Backend._plugins:
    dist.Backend.register_backend("mrc", _create, extended_api=True)
