/*
 * EIP-191 / ECDSA public-key recovery on libsecp256k1, and Keccak-256 (keccak.c), for
 * WebAssembly with no libc and no allocator: exported buffers and functions. Built by build.sh
 * into functions/_shared/auth/secp256k1-wasm.ts.
 *
 * io layout: [0, 64) compact signature r ‖ s, [64, 96) message hash, [96, 161) the recovered
 * public key, uncompressed (0x04 ‖ x ‖ y). recover(recid) returns 1 when a key was recovered,
 * 0 when r or s is out of range or no curve point has x = r.
 */
#define ENABLE_MODULE_RECOVERY 1
#define USE_EXTERNAL_DEFAULT_CALLBACKS 1
#include "src/secp256k1.c"
#include "src/precomputed_ecmult.c"
#include "src/precomputed_ecmult_gen.c"
#include "keccak.c"

/* Only reachable on API misuse (a NULL argument) or from the allocating functions, neither of
 * which recover() does: trap rather than continue. */
void secp256k1_default_illegal_callback_fn(const char *message, void *data) {
  (void)message;
  (void)data;
  __builtin_trap();
}
void secp256k1_default_error_callback_fn(const char *message, void *data) {
  (void)message;
  (void)data;
  __builtin_trap();
}
void *malloc(size_t size) {
  (void)size;
  __builtin_trap();
}
void *realloc(void *ptr, size_t size) {
  (void)ptr;
  (void)size;
  __builtin_trap();
}
void free(void *ptr) { (void)ptr; }
void abort(void) { __builtin_trap(); }

static unsigned char io[64 + 32 + 65];

__attribute__((export_name("io"))) unsigned char *io_buffer(void) { return io; }

__attribute__((export_name("recover"))) int recover(int recid) {
  secp256k1_ecdsa_recoverable_signature signature;
  secp256k1_pubkey pubkey;
  size_t length = 65;
  if (recid < 0 || recid > 3) return 0;
  if (!secp256k1_ecdsa_recoverable_signature_parse_compact(secp256k1_context_static, &signature,
                                                           io, recid)) {
    return 0;
  }
  if (!secp256k1_ecdsa_recover(secp256k1_context_static, &pubkey, &signature, io + 64)) return 0;
  secp256k1_ec_pubkey_serialize(secp256k1_context_static, io + 96, &length, &pubkey,
                                SECP256K1_EC_UNCOMPRESSED);
  return 1;
}
