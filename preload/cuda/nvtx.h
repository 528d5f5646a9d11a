/* NVTX ranges and marks as PROF_REC_NVTX records, reached two ways:
 * - the NVTX v3 injection interface: header-only NVTX code in the program loads the
 *   library that NVTX_INJECTION64_PATH names (profrun points it at libprof.so) and calls
 *   its exported InitializeInjectionNvtx2, which fills the program's NVTX function table;
 * - interposition of the functions libnvToolsExt.so.1 / libnvtx3interop.so.1 export, for
 *   programs linked against those (a call that reaches us through both is recorded once).
 * NVTX events are not API calls: they have no API table. PROF_API_NVTX_BASE (768..1023)
 * is kept free for them should they ever need one. */
#ifndef PROF_NVTX_H
#define PROF_NVTX_H

#define PROF_API_NVTX_BASE 768

#endif
