/* bad_plugin: plugins the harness must refuse, each with a message that says why.
 *  -DMISSING_SYMBOL: calls a function nothing defines, so dlopen(RTLD_NOW) fails and dlerror()
 *   names the symbol (as a plugin built for a vendor's MRC stack fails where a symbol it needs,
 *   such as mlx5dv_is_supported, is not provided);
 *  otherwise: loads, but exports only an older interface's symbol, ncclNetPlugin_v7.
 */
#include "net_v8.h"

#ifdef MISSING_SYMBOL
void mrc_nccl_test_symbol_nobody_defines(void);

static ncclResult_t bad_init(ncclDebugLogger_t logger) {
  (void)logger;
  mrc_nccl_test_symbol_nobody_defines();
  return ncclSuccess;
}

const ncclNet_v8_t ncclNetPlugin_v8 = {.name = "missing-symbol", .init = bad_init};
#else
const ncclNet_v8_t ncclNetPlugin_v7 = {.name = "v7-only"};
#endif
