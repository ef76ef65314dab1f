/*
 * mrc.h - the OCP MRC application API, as implemented by mrc's lib_mrc.so.
 *
 * MRC (Multipath Reliable Connection) is an RDMA reliable connection sprayed over many paths
 * and network planes. This API creates MRC queue pairs and completion queues next to the
 * libibverbs objects an application already uses (device context, protection domain, memory
 * regions, work requests and completions are libibverbs types).
 *
 * Names, signatures, structure layouts, enumerator values and version macros are those of the
 * OCP MRC 1.0 API, so programs written against it build and link unchanged. The comments are
 * mrc's own; docs/OCP-COMPAT.md lists what each call does in mrc and which errors it gives.
 *
 * Return conventions (as in libibverbs): functions returning int give 0 on success; on failure
 * -1 with errno set, except mrc_post_send(), which returns the errno value itself (as
 * ibv_post_send() does) and also sets errno. Functions returning pointers give NULL with errno
 * set.
 */
#ifndef _MRC_API_H_
#define _MRC_API_H_

#include <stdint.h>
#include <infiniband/verbs.h>

#include <mrc_api_ver.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Size of the opaque provider-specific configuration blobs below. */
#define MRC_MAX_VENDOR_CFG_SIZE 128

/* MRC wire protocol versions, one bit each. Devices report the set they speak; a QP asks for
 * one bit, or 0 for the provider's choice. */
enum mrc_protocol_version {
	MRC_PROTOCOL_VERSION_0	= 0,
	MRC_PROTOCOL_VERSION_1	= 1 << 0,
};

struct mrc_context;
struct mrc_qp_hint;
struct mrc_qp;
struct mrc_cq;
struct mrc_comp_channel;

/* Optional device features (mrc_device_attr.cap). */
enum mrc_device_cap {
	MRC_DEVICE_CAP_TRIM_NACK	= 1 << 0, /* sends NACKs for trimmed packets */
	MRC_DEVICE_CAP_DYNAMIC_MPR	= 1 << 1, /* MPR may change while connected */
	MRC_DEVICE_CAP_SVC_TIME		= 1 << 2, /* responder reports its service time */
};

/* What an MRC device supports. */
struct mrc_device_attr {
	/* OR of mrc_protocol_version bits; 0 = the provider picks. */
	uint32_t mrc_protocol_version;

	struct {
		uint16_t max_wimm;      /* largest max_wimm a requester may set */
		uint16_t max_wimm_dest; /* largest max_wimm_dest a responder may set */
	} wimm_attr;

	struct {
		uint8_t max_mpr;        /* largest MPR, in units of 128 PSNs */
		uint8_t mpr_resolution; /* MPR granularity, in units of 128 PSNs */
	} mpr_attr;

	struct {
		uint32_t max_qp_hint;   /* how many QP hints may exist */
	} qp_attr;

	uint32_t cap;                   /* OR of mrc_device_cap */
};

/*
 * Reports whether the verbs device speaks MRC (*supported non-zero) and its limits.
 * Programs written for API 1.0.1 or later use the _ex form, which also names the MRC context.
 */
#if MRC_API_VER_USED >= MRC_API_VER(1, 0, 1)
int mrc_query_device_ex(struct ibv_context *context,
			struct mrc_context *mcontext,
			struct mrc_device_attr *attr,
			int *supported);
#endif
int mrc_query_device(struct ibv_context *context,
		     struct mrc_device_attr *attr,
		     int *supported);

/* The API versions the library implements (MRC_API_VER encoding); callable before any
 * context exists. Any pointer may be NULL. */
void mrc_query_version(uint32_t *current_version,
		      uint32_t *last_supported_version,
		      uint32_t *vendor_version,
			  uint32_t *last_supported_vendor_version);

/* The API versions the application was written for; 0 = not stated. */
struct mrc_context_attr {
	uint32_t mrc_api_version_used;
	uint32_t mrc_vendor_api_version_used;
};

/*
 * Creates the MRC context of an opened verbs device: the parent of every MRC object the
 * application creates. `context_attr` may be NULL.
 */
struct mrc_context *mrc_create_context(struct ibv_context *vcontext,
				       struct mrc_context_attr *context_attr);

/* Destroys a context; fails with EBUSY while it still owns QPs, CQs, channels or hints. */
int mrc_destroy_context(struct mrc_context *mrc_ctx);

/* Completion channels: a file descriptor that becomes readable when a CQ armed with
 * mrc_req_notify_cq() receives a completion. */
int mrc_create_comp_channel(struct mrc_context *mrc_ctx,
			    struct mrc_comp_channel **channel);
int mrc_get_comp_channel_fd(struct mrc_comp_channel *channel,
			    int *fd);
int mrc_destroy_comp_channel(struct mrc_comp_channel *channel);

/* Creates a CQ with room for at least `cqe` completions, optionally tied to a channel. */
struct mrc_cq *mrc_create_cq(struct mrc_context *mrc_ctx,
			     int cqe,
			     void *cq_context,
			     struct mrc_comp_channel *channel,
			     int comp_vector);

/* Moves up to num_entries completions into wc; returns how many (fewer means the CQ is now
 * empty), or -1. */
int mrc_poll_cq(struct mrc_cq *cq,
		int num_entries,
		struct ibv_wc *wc);

int mrc_destroy_cq(struct mrc_cq *cq);

/* Expected traffic of the QPs that share a hint, so a provider can size its resources. */
struct mrc_qp_hint_attr {
	/* QPs of this hint sending to one peer address at the same time. */
	int num_qps_per_peer;
	/* Distinct peer addresses these QPs send to at the same time. */
	int num_send_peers;
	/* Remote QPs sending to the same peer as this QP (the incast its target sees). */
	int num_remote_recv_peers;
	uint8_t vendor_cfg[MRC_MAX_VENDOR_CFG_SIZE];
};

enum mrc_qp_hint_attr_mask {
	MRC_QP_HINT_NUM_QPS_PER_PEER		= 1 << 0,
	MRC_QP_HINT_NUM_SEND_PEERS		= 1 << 1,
	MRC_QP_HINT_NUM_REMOTE_RECV_PEERS	= 1 << 2,
	MRC_QP_HINT_VENDOR_CFG			= 1 << 31
};

struct mrc_qp_hint_init_attr {
	struct mrc_qp_hint_attr attr;
};

struct mrc_qp_hint *mrc_create_qp_hint(
	struct mrc_context *mrc_ctx,
	struct mrc_qp_hint_init_attr *init_attr);
/* Fails with EBUSY while a QP uses the hint. */
int mrc_destroy_qp_hint(struct mrc_qp_hint *qp_hint);
int mrc_query_qp_hint(struct mrc_qp_hint *qp_hint,
		      struct mrc_qp_hint_attr *qp_hint_attr,
		      int qp_hint_attr_mask);
int mrc_modify_qp_hint(struct mrc_qp_hint *qp_hint,
		       struct mrc_qp_hint_attr *qp_hint_attr,
		       int qp_hint_attr_mask);

/* What a new QP needs. */
struct mrc_qp_init_attr {
	void               *qp_context;
	struct mrc_cq      *send_cq;
	struct mrc_cq      *recv_cq;
	struct ibv_qp_cap   cap;            /* in: wanted; out (query): granted */
	int                 sq_sig_all;     /* every send completes, whatever its flags */
	struct ibv_pd      *pd;
	uint64_t            send_ops_flags; /* enum ibv_qp_create_send_ops_flags */
	/* Wire protocol version: one mrc_protocol_version bit, 0 = provider default. */
	enum mrc_protocol_version    protocol_version;
};

struct mrc_qp *mrc_create_qp(struct mrc_context *mrc_ctx,
			     struct mrc_qp_init_attr *mrc_qp_attr);
int mrc_destroy_qp(struct mrc_qp *qp);

/*
 * Which mrc_qp_attr fields a query or modify uses. The transition that normally sets each:
 *   RESET -> INIT : MRC_QP_HINT, MRC_QP_EV_PROFILE_ID, MRC_QP_CC_PROFILE_ID
 *   INIT  -> RTR  : MRC_QP_MAX_WIMM_DEST, MRC_QP_MPR_DEST (and dynamic MPR)
 *   RTR   -> RTS  : MRC_QP_MAX_WIMM, MRC_QP_MPR, MRC_QP_RETRY_CNT, MRC_QP_TIMEOUT
 */
enum mrc_qp_attr_mask {
	MRC_QP_MAX_WIMM			= 1 << 0,
	MRC_QP_MAX_WIMM_DEST		= 1 << 1,
	MRC_QP_MPR			= 1 << 2,
	MRC_QP_MPR_DEST			= 1 << 3,
	MRC_QP_TIMEOUT			= 1 << 4,
	MRC_QP_EV_PROFILE_ID		= 1 << 5,
	MRC_QP_CC_PROFILE_ID		= 1 << 6,
	MRC_QP_HINT			= 1 << 7,
	MRC_QP_RETRY_CNT		= 1 << 8,
	MRC_QP_CAP			= 1 << 9,
	MRC_QP_VENDOR_CFG		= 1 << 31
};

/* Per-QP capability switches (mrc_qp_attr.cap). */
enum mrc_qp_cap {
	MRC_QP_CAP_TRIM_NACK_DEST_UNSUPPORTED	=  1 << 0, /* peer cannot send trim NACKs */
	MRC_QP_CAP_DYNAMIC_MPR			=  1 << 1, /* enable dynamic MPR */
	MRC_QP_CAP_SVC_TIME_DEST_UNSUPPORTED	=  1 << 2  /* peer cannot report service time */
};

/* MRC attributes of a QP (query and modify). */
struct mrc_qp_attr {
	struct {
		uint8_t mpr;      /* requester PSN window, units of 128 PSNs */
		uint8_t mpr_dest; /* responder PSN window, units of 128 PSNs */
	} mpr;

	struct {
		uint16_t max_wimm;      /* WRITE-with-immediate in flight, as requester */
		uint16_t max_wimm_dest; /* ... and as responder */
	} wimm;

	/* ACK timeout 1.024 us * 2^timeout, at most 24 (about 17 s). */
	uint8_t timeout;

	/* EV and CC profiles a controller programmed; the ids are learned out of band. */
	struct {
		uint64_t ev_profile_id;
		uint64_t cc_profile_id;
	} profile;

	struct {
		uint8_t linear_cnt; /* retries at a fixed interval, at most 7 */
		uint8_t exp_cnt;    /* then with exponential backoff, at most 25 (25 = forever) */
	} retry;

	struct mrc_qp_hint *qp_hint; /* NULL: no hint */

	uint32_t cap;                /* OR of mrc_qp_cap */

	uint8_t vendor_cfg[MRC_MAX_VENDOR_CFG_SIZE];
};

int mrc_query_qp(struct mrc_qp *qp,
		 struct ibv_qp_attr *vattr,
		 int vattr_mask,
		 struct mrc_qp_attr *mrc_attr,
		 int mrc_attr_mask,
		 struct mrc_qp_init_attr *init_attr);

/*
 * Moves a QP through RESET -> INIT -> RTR -> RTS (or to ERROR/RESET) and sets attributes.
 * IBV_QP_STATE / IBV_QP_CUR_STATE drive the state machine as in ibv_modify_qp(); IBV_QP_AV
 * names the peer by its RoCEv2 destination GID. The OCP API does not use IBV_QP_PORT,
 * IBV_QP_TIMEOUT, IBV_QP_RETRY_CNT, IBV_QP_RNR_RETRY, IBV_QP_MIN_RNR_TIMER,
 * IBV_QP_MAX_QP_RD_ATOMIC, IBV_QP_MAX_DEST_RD_ATOMIC, IBV_QP_ALT_PATH or
 * IBV_QP_PATH_MIG_STATE; timeouts and retries are MRC_QP_TIMEOUT and MRC_QP_RETRY_CNT.
 */
int mrc_modify_qp(struct mrc_qp *qp,
		  struct ibv_qp_attr *vattr,
		  int vattr_mask,
		  struct mrc_qp_attr *mrc_attr,
		  int mrc_attr_mask);

int mrc_get_qpn(struct mrc_qp *qp,
		uint32_t *qpn);

/* Posts receives, consumed by incoming RDMA WRITE with immediate (as ibv_post_recv()). */
int mrc_post_recv(struct mrc_qp *qp,
		  struct ibv_recv_wr *wr,
		  struct ibv_recv_wr **bad_wr);

/* Posts RDMA WRITE and RDMA WRITE with immediate work requests (as ibv_post_send()). */
int mrc_post_send(struct mrc_qp *qp,
		  struct ibv_send_wr *wr,
		  struct ibv_send_wr **bad_wr);

/* An asynchronous event: what it is about, and which event. */
struct mrc_async_event {
	union {
		struct mrc_cq *cq;
		struct mrc_qp *qp;
		int            port_num;
	} element;
	enum ibv_event_type    event_type;
};

/* Blocks for the next asynchronous event of the context; each must be acknowledged. */
int mrc_get_async_event(struct mrc_context *mrc_ctx,
			struct mrc_async_event *event);
void mrc_ack_async_event(struct mrc_async_event *event);

/* Arms a CQ: its channel is told about the next completion. */
int mrc_req_notify_cq(struct mrc_cq *cq,
		      int solicited_only);

/* Blocks (or, with a non-blocking fd, returns EAGAIN) for the next CQ event on a channel. */
int mrc_get_cq_event(struct mrc_comp_channel *channel,
		     struct mrc_cq **cq,
		     void **cq_context);

/* Acknowledges CQ events; mrc_destroy_cq() refuses (EBUSY) while events are unacknowledged. */
void mrc_ack_cq_events(struct mrc_cq *cq,
		       unsigned int nevents);

#ifdef __cplusplus
}
#endif

#endif /* _MRC_API_H_ */
