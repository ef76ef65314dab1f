/* net_v8.h - the part of NCCL's external net plugin interface (ext-net, version 8) that mrc's
 * NCCL harness and its test plugin use, declared here so that neither needs NCCL's headers.
 *
 * NCCL loads a net plugin with dlopen() and looks up `ncclNetPlugin_v8`, a struct of function
 * pointers. Compatibility is the point: every name, constant, enumerator value, field order and
 * type below is NCCL's (ext-net/example/nccl/net_v8.h, net_device.h, err.h and net.h), so the
 * layout a plugin built against NCCL's headers exports is the layout read here. The comments are
 * mrc's own.
 */
#ifndef MRC_TESTS_NCCL_NET_V8_H
#define MRC_TESTS_NCCL_NET_V8_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Results of every call. */
typedef enum {
  ncclSuccess = 0,
  ncclUnhandledCudaError = 1,
  ncclSystemError = 2,
  ncclInternalError = 3,
  ncclInvalidArgument = 4,
  ncclInvalidUsage = 5,
  ncclRemoteError = 6,
  ncclInProgress = 7,
  ncclNumResults = 8
} ncclResult_t;

/* The logger NCCL hands to init(): a level, a subsystem mask, the caller's file and line, then
 * printf-style arguments. */
typedef enum {
  NCCL_LOG_NONE = 0,
  NCCL_LOG_VERSION = 1,
  NCCL_LOG_WARN = 2,
  NCCL_LOG_INFO = 3,
  NCCL_LOG_ABORT = 4,
  NCCL_LOG_TRACE = 5
} ncclDebugLogLevel;

typedef enum {
  NCCL_INIT = 1,
  NCCL_COLL = 2,
  NCCL_P2P = 4,
  NCCL_SHM = 8,
  NCCL_NET = 16,
  NCCL_GRAPH = 32,
  NCCL_TUNING = 64,
  NCCL_ENV = 128,
  NCCL_ALLOC = 256,
  NCCL_CALL = 512,
  NCCL_ALL = ~0
} ncclDebugLogSubSys;

typedef void (*ncclDebugLogger_t)(ncclDebugLogLevel level, unsigned long flags, const char* file,
                                  int line, const char* fmt, ...);

/* The opaque connection handle listen() fills and connect() is given, carried between ranks by
 * NCCL: at most this many bytes. */
#define NCCL_NET_HANDLE_MAXSIZE 128

/* ptrSupport bits and regMr types: host memory, CUDA memory, DMA-BUF registration. */
#define NCCL_PTR_HOST 0x1
#define NCCL_PTR_CUDA 0x2
#define NCCL_PTR_DMABUF 0x4

/* Requests a comm may have in flight (NCCL never posts more). */
#define NCCL_NET_MAX_REQUESTS 8

/* Device offload (net_device.h): a host-only plugin reports NCCL_NET_DEVICE_HOST, version 0. */
#define NCCL_NET_DEVICE_INVALID_VERSION 0x0

typedef enum { NCCL_NET_DEVICE_HOST = 0, NCCL_NET_DEVICE_UNPACK = 1 } ncclNetDeviceType;

typedef struct {
  ncclNetDeviceType netDeviceType;
  int netDeviceVersion;
  void* handle;
  size_t size;
  int needsProxyProgress;
} ncclNetDeviceHandle_v7_t;

typedef ncclNetDeviceHandle_v7_t ncclNetDeviceHandle_v8_t;

/* What getProperties() reports of a device. */
typedef struct {
  char* name;      /* for logs */
  char* pciPath;   /* the device's PCI path in /sys (NCCL's topology detection reads it) */
  uint64_t guid;   /* the NIC chip's identifier (several PCI functions may share it) */
  int ptrSupport;  /* NCCL_PTR_* bits */
  int regIsGlobal; /* a registration is usable on every comm of the device */
  int speed;       /* Mbit/s */
  int port;        /* port number */
  float latency;   /* microseconds; 0: not known */
  int maxComms;    /* comms the device can hold */
  int maxRecvs;    /* receives one irecv() may group */
  ncclNetDeviceType netDeviceType;
  int netDeviceVersion;
} ncclNetProperties_v8_t;

/* The plugin: what `ncclNetPlugin_v8` holds. connect() and accept() must not block: they return
 * ncclSuccess with a NULL comm until the connection is up, and are called again. isend() and
 * irecv() may return ncclSuccess with a NULL request (try again later). test() sets *done, and
 * with sizes != NULL the bytes moved. */
typedef struct {
  const char* name;
  ncclResult_t (*init)(ncclDebugLogger_t logFunction);
  ncclResult_t (*devices)(int* ndev);
  ncclResult_t (*getProperties)(int dev, ncclNetProperties_v8_t* props);
  ncclResult_t (*listen)(int dev, void* handle, void** listenComm);
  ncclResult_t (*connect)(int dev, void* handle, void** sendComm,
                          ncclNetDeviceHandle_v8_t** sendDevComm);
  ncclResult_t (*accept)(void* listenComm, void** recvComm, ncclNetDeviceHandle_v8_t** recvDevComm);
  ncclResult_t (*regMr)(void* comm, void* data, size_t size, int type, void** mhandle);
  ncclResult_t (*regMrDmaBuf)(void* comm, void* data, size_t size, int type, uint64_t offset,
                              int fd, void** mhandle);
  ncclResult_t (*deregMr)(void* comm, void* mhandle);
  ncclResult_t (*isend)(void* sendComm, void* data, int size, int tag, void* mhandle,
                        void** request);
  ncclResult_t (*irecv)(void* recvComm, int n, void** data, int* sizes, int* tags, void** mhandles,
                        void** request);
  ncclResult_t (*iflush)(void* recvComm, int n, void** data, int* sizes, void** mhandles,
                         void** request);
  ncclResult_t (*test)(void* request, int* done, int* sizes);
  ncclResult_t (*closeSend)(void* sendComm);
  ncclResult_t (*closeRecv)(void* recvComm);
  ncclResult_t (*closeListen)(void* listenComm);
  ncclResult_t (*getDeviceMr)(void* comm, void* mhandle, void** dptr_mhandle);
  ncclResult_t (*irecvConsumed)(void* recvComm, int n, void* request);
} ncclNet_v8_t;

#ifdef __cplusplus
}
#endif

#endif
