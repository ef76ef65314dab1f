/*
 * mrc_ctl.h - the OCP MRC controller API, as implemented by mrc's lib_mrc.so.
 *
 * A network controller uses this API to configure and watch MRC: EV (entropy value) format
 * profiles, EV profiles with explicit or generated EVs and per-EV states, congestion control
 * profiles, EV events (paths the transport marked bad or good again), connectionless EV
 * probes, and the administrative state of ports.
 *
 * Names, signatures, structure layouts, enumerator values and version macros are those of the
 * OCP MRC 1.0 controller API; the comments are mrc's own. In mrc the calls act on the engine
 * of the process that opened the device (see docs/OCP-COMPAT.md); `mrcctl` reaches the same
 * operations from another process.
 */
#ifndef _MRC_CTL_API_H_
#define _MRC_CTL_API_H_

#include <stdint.h>
#include <infiniband/verbs.h>

#include <mrc.h>
#include <mrc_ctl_api_ver.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MRC_CTL_MAX_VENDOR_CFG_SIZE 128

/* An EV entry with no value and no port. */
#define MRC_CTL_EV_UNPOPULATED \
	((struct mrc_ctl_ev){ .val = { 0 }, .port = 0 })

/* Bytes in an EV value. */
#define MRC_CTL_EV_MAX_BYTES 32

enum mrc_ctl_protocol_version {
	MRC_CTL_PROTOCOL_VERSION_0	= 0,
	MRC_CTL_PROTOCOL_VERSION_1	= 1 << 0,
};

/* Life cycle shared by all controller profiles: INIT -> OFFLINE -> ONLINE -> OFFLINE -> INIT. */
enum mrc_ctl_profile_state {
	MRC_CTL_PROFILE_INIT,    /* exists, not configured */
	MRC_CTL_PROFILE_OFFLINE, /* configured, not in use, may be changed */
	MRC_CTL_PROFILE_ONLINE,  /* usable by QPs */
};

/* ---- Device ------------------------------------------------------------------------------ */

/* Optional controller features (mrc_ctl_device_attr.opt_attr). */
enum mrc_ctl_attr_opt {
	MRC_CTL_OPT_CAP_EV_PROFILE_MODIFY_ONLINE	= 1 << 0,
	MRC_CTL_OPT_CAP_CC_PROFILE_MODIFY_ONLINE	= 1 << 1,
	MRC_CTL_OPT_CAP_EV_EVENT			= 1 << 2,
	/* explicit EV arrays must be one contiguous range base .. base + count - 1 */
	MRC_CTL_OPT_CAP_EV_EXPLICIT_RANGE		= 1 << 3,
	/* mrc_ctl_ev_event.drop_count is an exact count, not a flag */
	MRC_CTL_OPT_CAP_EV_EVENT_PRECISE_DROP_CNT	= 1 << 4,
	MRC_CTL_OPT_CAP_EP_OP_EV_PROBE			= 1 << 5
};

/* What the controller side of a device supports. */
struct mrc_ctl_device_attr {
	uint32_t mrc_ctl_protocol_version; /* OR of mrc_ctl_protocol_version */

	struct {
		uint32_t ev_max_fmt_profiles;  /* EV format profiles */
		uint32_t ev_max_profiles;      /* EV profiles */
		uint32_t ev_max_count;         /* EVs over all profiles */
		uint32_t ev_free_count;        /* EVs not yet given to a profile */
		uint32_t ev_max_count_profile; /* EVs in one profile */
		uint32_t ev_count_align;       /* explicit arrays are a multiple of this */
		uint32_t ev_max_width;         /* significant bits of an EV */
		uint32_t ev_fmt_mode_mask;     /* OR of mrc_ctl_ev_fmt_mode */
		uint32_t ev_mode_mask;         /* OR of mrc_ctl_ev_mode */
		uint32_t ev_op_max_entries;    /* entries per EV operation, 0 = no limit */
	} ev;

	struct {
		uint32_t cc_max_profiles;
		/* NULL-terminated list of algorithm names, owned by the library
		 * ("uet-1.0-nscc" is UET 1.0 NSCC). */
		const char **algorithms;
	} cc;

	uint32_t phy_port_mask;            /* bit N = port N (1-based) */
	uint32_t opt_attr;                 /* OR of mrc_ctl_attr_opt */
};

/* Controller attributes of a device; the _ex form (API 1.0.1) also takes the MRC context. */
#if MRC_CTL_API_VER_USED >= MRC_CTL_API_VER(1, 0, 1)
int mrc_ctl_query_device_ex(struct ibv_context *context,
			    struct mrc_context *mcontext,
			    struct mrc_ctl_device_attr *ctl_attr,
			    int *supported);
#endif
int mrc_ctl_query_device(struct ibv_context *context,
			 struct mrc_ctl_device_attr *ctl_attr);

/* Controller API versions (MRC_CTL_API_VER encoding); any pointer may be NULL. */
void mrc_ctl_query_version(uint32_t *current_version,
			  uint32_t *last_supported_version,
			  uint32_t *vendor_version,
			  uint32_t *last_supported_vendor_version);

/* ---- Ports ------------------------------------------------------------------------------- */

enum mrc_ctl_port_admin_state {
	MRC_CTL_PORT_ADMIN_DISABLED = 0,
	MRC_CTL_PORT_ADMIN_ENABLED  = 1,
};

enum mrc_ctl_port_attr_mask {
	MRC_CTL_PORT_ADMIN_STATE	= 1 << 0,
};

struct mrc_ctl_port_attr {
	/* A disabled port reads IBV_PORT_DOWN in ibv_query_port(). */
	enum mrc_ctl_port_admin_state port_admin_state;
};

int mrc_ctl_query_port(struct mrc_context *context,
		       uint8_t port_num,
		       struct mrc_ctl_port_attr *attr,
		       int attr_mask);
int mrc_ctl_modify_port(struct mrc_context *context,
			uint8_t port_num,
			struct mrc_ctl_port_attr *attr,
			int attr_mask);

/* ---- EV format profiles ------------------------------------------------------------------ */

/* Where an EV goes in a packet. */
enum mrc_ctl_ev_fmt_mode {
	MRC_CTL_EV_FMT_MODE_STEV	= 1 << 0, /* IPv6 flow label + UDP source port */
	MRC_CTL_EV_FMT_MODE_SRV6	= 1 << 1, /* SRv6 (optionally with SRH) uSIDs */
	MRC_CTL_EV_FMT_MODE_UDP		= 1 << 2, /* the UDP source port alone */
};

enum mrc_ctl_ev_fmt_op {
	MRC_CTL_EV_FMT_OP_MODIFY_FIELDS,
	MRC_CTL_EV_FMT_OP_QUERY_FIELDS,
};

enum mrc_ctl_ev_fmt_profile_attr_mask {
	MRC_CTL_EV_FMT_PROFILE_STATE		= 1 << 0,
	MRC_CTL_EV_FMT_PROFILE_CUR_STATE	= 1 << 1,
	MRC_CTL_EV_FMT_PROFILE_MODE		= 1 << 2,
	MRC_CTL_EV_FMT_PROFILE_OP		= 1 << 3,
	MRC_CTL_EV_FMT_VENDOR_CFG		= 1 << 31,
};

struct mrc_ctl_ev_fmt_field {
	uint8_t width; /* bits */
};

/* An EV format: the fields (and so the total width) an expanded EV occupies. */
struct mrc_ctl_ev_fmt_profile_attr {
	enum mrc_ctl_profile_state profile_state;     /* requested state */
	enum mrc_ctl_profile_state cur_profile_state; /* state now (query) */
	enum mrc_ctl_ev_fmt_mode ev_fmt_mode;

	struct {
		enum mrc_ctl_ev_fmt_op op;
		struct mrc_ctl_ev_fmt_field *fmt_fields;
		int fmt_field_count;                  /* in: array length; out: fields */
	} ev_fmt_op;

	uint8_t vendor_cfg[MRC_CTL_MAX_VENDOR_CFG_SIZE];
};

/* Moves: INIT -> OFFLINE needs MODE (with the move, or given while INIT), OFFLINE -> ONLINE
 * needs the fields (MODIFY_FIELDS); MODE and fields while ONLINE: EBUSY; any other move: EINVAL.
 * A refused call changes and creates nothing. */
int mrc_ctl_modify_ev_fmt_profile(struct mrc_context *mrc_ctx,
				  uint64_t ev_fmt_profile_id,
				  struct mrc_ctl_ev_fmt_profile_attr *attr,
				  int attr_mask);
int mrc_ctl_query_ev_fmt_profile(struct mrc_context *mrc_ctx,
				 uint64_t ev_fmt_profile_id,
				 struct mrc_ctl_ev_fmt_profile_attr *attr,
				 int attr_mask);

/* ---- EVs --------------------------------------------------------------------------------- */

/* An EV value. STEV uses the first 4 bytes; SRv6 an address in bytes 0-15 and the SRH segment
 * in bytes 16-31. mrc's UDP mode keeps the source port in the first 2 bytes, big-endian (its
 * STEV mode the flow label in the next 2). */
typedef uint8_t mrc_ctl_ev_t[MRC_CTL_EV_MAX_BYTES];

/* An EV and the port (1-based) it leaves from. */
struct mrc_ctl_ev {
	mrc_ctl_ev_t val;
	uint8_t port;
};

enum mrc_ctl_ev_state {
	MRC_CTL_EV_GOOD		= 1 << 0,
	MRC_CTL_EV_ASSUMED_BAD	= 1 << 1,
	MRC_CTL_EV_DENIED	= 1 << 2,
	MRC_CTL_EV_UNKNOWN	= 1 << 31
};

/* ---- EV profiles ------------------------------------------------------------------------- */

enum mrc_ctl_ev_mode {
	MRC_CTL_EV_MODE_AUTO	= 1 << 0, /* the provider chooses EVs */
	MRC_CTL_EV_MODE_EXP	= 1 << 1, /* the controller lists them */
	MRC_CTL_EV_MODE_GEN	= 1 << 2, /* the provider generates them from field rules */
};

enum mrc_ctl_ev_op {
	MRC_CTL_EV_OP_REPLACE_EV,
	MRC_CTL_EV_OP_MODIFY_EV_STATE,
	MRC_CTL_EV_OP_QUERY_EV_STATE,
	MRC_CTL_EV_OP_QUERY_EV_ARRAY,
};

enum mrc_ctl_ev_fields_op {
	MRC_CTL_EV_FIELDS_OP_MODIFY_FIELDS,
	MRC_CTL_EV_FIELDS_OP_QUERY_FIELDS,
};

enum mrc_ctl_ev_profile_attr_mask {
	MRC_CTL_EV_PROFILE_STATE	= 1 << 0,
	MRC_CTL_EV_PROFILE_CUR_STATE	= 1 << 1,
	MRC_CTL_EV_PROFILE_MODE		= 1 << 2,
	MRC_CTL_EV_PROFILE_FMT_ID	= 1 << 3,
	MRC_CTL_EV_PROFILE_COUNT	= 1 << 4,
	MRC_CTL_EV_PROFILE_MIN_ACTIVE	= 1 << 5,
	MRC_CTL_EV_PROFILE_EVENT_MASK	= 1 << 6,
	MRC_CTL_EV_PROFILE_EV_OP	= 1 << 7,
	MRC_CTL_EV_PROFILE_EV_FIELDS_OP	= 1 << 8,
	MRC_CTL_EV_PROFILE_VENDOR_CFG	= 1 << 31,
};

/* One field of an EV: start from init_val, then lay the EV's bits (most significant first)
 * over the bits set in `mask`; generated EVs draw the field value from [min_val, max_val]. */
struct mrc_ctl_ev_field {
	uint32_t width;
	uint32_t init_val;
	uint32_t min_val;
	uint32_t max_val;
	uint32_t mask;
};

enum mrc_ctl_ev_op_flags {
	/* REPLACE_EV: replace every copy of `ev`, not just one */
	MRC_CTL_EV_OP_F_ALL_COPIES  = 1 << 0,
};

/* One entry of an EV operation; which members are read or written depends on the operation
 * (REPLACE_EV: ev, ev_new, state, flags; MODIFY_EV_STATE: ev, state; QUERY_EV_STATE: ev in,
 * state out; QUERY_EV_ARRAY: ev and state out). */
struct mrc_ctl_ev_op_entry {
	struct mrc_ctl_ev ev;
	struct mrc_ctl_ev ev_new;
	enum mrc_ctl_ev_state state;
	uint32_t flags;
};

/* An EV profile: how many EVs QPs of the profile use, where they come from, and their states. */
struct mrc_ctl_ev_profile_attr {
	enum mrc_ctl_profile_state profile_state;
	enum mrc_ctl_profile_state cur_profile_state;
	enum mrc_ctl_ev_mode ev_mode;
	uint64_t ev_fmt_profile_id;
	/* EVs in the profile (set: wanted; query: as adjusted by the provider). */
	uint32_t ev_count;
	/* Floor of EVs kept in use however many look bad; at most ev_count. */
	uint32_t ev_min_active;
	/* States that raise EV events (MRC_CTL_EV_ASSUMED_BAD and/or MRC_CTL_EV_GOOD). */
	int ev_event_mask;

	struct {
		enum mrc_ctl_ev_op op;
		struct mrc_ctl_ev_op_entry *entries;
		int entry_count;  /* in: array length; out: entries used or needed */
	} ev_op;

	struct {
		enum mrc_ctl_ev_fields_op op;
		struct mrc_ctl_ev_field *fields;
		int field_count;  /* in: array length; out: fields used or needed */
	} ev_fields_op;

	uint8_t vendor_cfg[MRC_CTL_MAX_VENDOR_CFG_SIZE];
};

/* EV_OP and EV_FIELDS_OP are mutually exclusive in one call (EINVAL). INIT -> OFFLINE needs MODE
 * (with the move, or given while INIT); MODE, FMT_ID, COUNT and MIN_ACTIVE while ONLINE: EBUSY.
 * REPLACE_EV and MODIFY_EV_STATE act on a profile past INIT (one in INIT, or never created:
 * EINVAL) and on EVs the device can send in the profile's EV format (mrc, UDP: one of the port's
 * EV source ports, big-endian in val[0..1], every other byte 0; STEV: such a port, then the flow
 * label in val[2..3]; SRV6: an address, the plane's block then the path's uSIDs; else EINVAL).
 * Profile 0 always exists, ONLINE: the QPs created without MRC_QP_EV_PROFILE_ID. A refused call
 * changes and creates nothing, but for an EV operation's entries before the one that failed. */
int mrc_ctl_modify_ev_profile(struct mrc_context *mrc_ctx,
			      uint64_t ev_profile_id,
			      struct mrc_ctl_ev_profile_attr *attr,
			      int attr_mask);
int mrc_ctl_query_ev_profile(struct mrc_context *mrc_ctx,
			     uint64_t ev_profile_id,
			     struct mrc_ctl_ev_profile_attr *attr,
			     int attr_mask);

/* ---- Congestion control profiles --------------------------------------------------------- */

enum mrc_ctl_cc_profile_attr_mask {
	MRC_CTL_CC_PROFILE_STATE	= 1 << 0,
	MRC_CTL_CC_PROFILE_CUR_STATE	= 1 << 1,
	MRC_CTL_CC_PROFILE_ALGORITHM	= 1 << 2,
	MRC_CTL_CC_PROFILE_CONFIG	= 1 << 3,
	MRC_CTL_CC_PROFILE_VENDOR_CFG	= 1 << 31,
};

struct mrc_ctl_cc_profile_attr {
	enum mrc_ctl_profile_state profile_state;
	enum mrc_ctl_profile_state cur_profile_state;
	/* One of mrc_ctl_device_attr.cc.algorithms; NULL turns congestion control off. */
	const char *algorithm;
	/* The algorithm's parameters, e.g. struct mrc_ctl_cc_nscc_cfg. */
	const void *cc_config;
	uint8_t vendor_cfg[MRC_CTL_MAX_VENDOR_CFG_SIZE];
};

/* NSCC ("uet-1.0-nscc") parameters. */
struct mrc_ctl_cc_nscc_cfg {
	uint8_t disable_qa;                /* non-zero: no quick adapt */
	uint32_t adjust_bytes_threshold;   /* bytes */
	uint32_t adjust_period_threshold;  /* ns */
	uint32_t base_rtt;                 /* ns */
	float eta;
	float fi;
	float fi_scale;
	float gamma;
	float max_md_jump;
	uint32_t max_cwnd;                 /* bytes */
	uint8_t qa_gate;
	uint32_t qa_threshold;             /* ns */
	uint32_t target_delay;             /* ns */
};

/* INIT -> OFFLINE needs ALGORITHM, OFFLINE -> ONLINE needs CONFIG (unless the algorithm is
 * NULL); ALGORITHM and CONFIG while ONLINE: EBUSY. Profile 0 always exists, ONLINE, and takes
 * no change (EBUSY): the congestion control of a QP created without MRC_QP_CC_PROFILE_ID. */
int mrc_ctl_modify_cc_profile(struct mrc_context *mrc_ctx,
			      uint64_t cc_profile_id,
			      struct mrc_ctl_cc_profile_attr *attr,
			      int attr_mask);
int mrc_ctl_query_cc_profile(struct mrc_context *mrc_ctx,
			     uint64_t cc_profile_id,
			     struct mrc_ctl_cc_profile_attr *attr,
			     int attr_mask);

/* ---- EV events --------------------------------------------------------------------------- */

/* An EV of a profile changed to a state in the profile's event mask. */
struct mrc_ctl_ev_event {
	uint64_t profile_id;
	struct mrc_ctl_ev ev;
	/* Events lost since the previous one: an exact count with
	 * MRC_CTL_OPT_CAP_EV_EVENT_PRECISE_DROP_CNT, otherwise 0 or 1. */
	uint32_t drop_count;
#if MRC_CTL_API_VER_USED >= MRC_CTL_API_VER(1, 0, 1)
	enum mrc_ctl_ev_state state; /* the new state (API 1.0.1 and later) */
#endif
};

/* A CQ of EV events (never overruns: events that do not fit are counted as dropped). */
struct mrc_cq *mrc_ctl_create_ev_event_cq(struct mrc_context *mrc_ctx,
					  int cqe,
					  void *cq_context,
					  struct mrc_comp_channel *channel,
					  int comp_vector);

/* Moves up to num_entries events out; returns how many, or a negative errno. */
int mrc_ctl_poll_ev_event(struct mrc_cq *ev_cq,
			  int num_entries,
			  struct mrc_ctl_ev_event *ev_event);

/* ---- Endpoint requests ------------------------------------------------------------------- */

enum mrc_ctl_ep_op_type {
	MRC_CTL_EP_OP_EV_PROBE,
	MRC_CTL_EP_OP_PORT_STATUS_UPDATE
};

struct mrc_ctl_ep_req {
	uint16_t req_id;         /* unique among outstanding requests */
	union ibv_gid sgid;      /* RoCEv2 GIDs */
	union ibv_gid dgid;
	enum mrc_ctl_ev_fmt_mode ev_fmt_mode;
	struct mrc_ctl_ev req_ev;
	union {
		struct {
			uint32_t port_status; /* bit N-1 = port N up */
		} port_status_update;
	} op;
};

struct mrc_ctl_ep_rsp {
	uint16_t req_id;
	uint8_t port;            /* port the response arrived on (1-based) */
	unsigned int rtt;        /* ns */
	uint8_t adj_svc_time;    /* non-zero: rtt excludes the responder's service time */
};

/* Sends a batch of endpoint requests of one kind and waits up to rsp_timeout ns for the
 * responses, returned in arrival order. */
int mrc_ctl_ep_batch_send_wait(struct mrc_context *mrc_ctx,
			       uint8_t req_tc,
			       enum mrc_ctl_ep_op_type op_type,
			       struct mrc_ctl_ep_req *req,
			       int num_req,
			       uint32_t rsp_timeout,
			       struct mrc_ctl_ep_rsp *rsp,
			       int *num_rsp);

#ifdef __cplusplus
}
#endif

#endif /* _MRC_CTL_API_H_ */
