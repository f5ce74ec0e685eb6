/*
 * Keccak-256 as Ethereum uses it (the original Keccak padding 0x01, not SHA3-256's 0x06): the
 * Keccak-f[1600] permutation after the compact public-domain reference (Saarinen's tiny_sha3),
 * absorbing in chunks through an exported buffer. Included by recover.c; tests/eth_test.ts holds it
 * equal to @noble/hashes' keccak_256 on inputs of every length across several rate blocks.
 */
#include <stdint.h>

#define KECCAK_RATE 136 /* bytes: 1600 - 2 * 256 bits */
#define KECCAK_CHUNK 4096

static const uint64_t keccak_rc[24] = {
    0x0000000000000001ULL, 0x0000000000008082ULL, 0x800000000000808aULL, 0x8000000080008000ULL,
    0x000000000000808bULL, 0x0000000080000001ULL, 0x8000000080008081ULL, 0x8000000000008009ULL,
    0x000000000000008aULL, 0x0000000000000088ULL, 0x0000000080008009ULL, 0x000000008000000aULL,
    0x000000008000808bULL, 0x800000000000008bULL, 0x8000000000008089ULL, 0x8000000000008003ULL,
    0x8000000000008002ULL, 0x8000000000000080ULL, 0x000000000000800aULL, 0x800000008000000aULL,
    0x8000000080008081ULL, 0x8000000000008080ULL, 0x0000000080000001ULL, 0x8000000080008008ULL};
static const int keccak_rotc[24] = {1,  3,  6,  10, 15, 21, 28, 36, 45, 55, 2,  14,
                                    27, 41, 56, 8,  25, 43, 62, 18, 39, 61, 20, 44};
static const int keccak_piln[24] = {10, 7,  11, 17, 18, 3, 5,  16, 8,  21, 24, 4,
                                    15, 23, 19, 13, 12, 2, 20, 14, 22, 9,  6,  1};

#define ROTL64(x, y) (((x) << (y)) | ((x) >> (64 - (y))))

static void keccakf(uint64_t st[25]) {
  uint64_t t, bc[5];
  for (int round = 0; round < 24; round++) {
    for (int i = 0; i < 5; i++) bc[i] = st[i] ^ st[i + 5] ^ st[i + 10] ^ st[i + 15] ^ st[i + 20];
    for (int i = 0; i < 5; i++) {
      t = bc[(i + 4) % 5] ^ ROTL64(bc[(i + 1) % 5], 1);
      for (int j = 0; j < 25; j += 5) st[j + i] ^= t;
    }
    t = st[1];
    for (int i = 0; i < 24; i++) {
      int j = keccak_piln[i];
      bc[0] = st[j];
      st[j] = ROTL64(t, keccak_rotc[i]);
      t = bc[0];
    }
    for (int j = 0; j < 25; j += 5) {
      for (int i = 0; i < 5; i++) bc[i] = st[j + i];
      for (int i = 0; i < 5; i++) st[j + i] ^= (~bc[(i + 1) % 5]) & bc[(i + 2) % 5];
    }
    st[0] ^= keccak_rc[round];
  }
}

/* wasm32 is little-endian, so the state's bytes are the lanes' bytes in order. */
static union {
  uint64_t lanes[25];
  uint8_t bytes[200];
} keccak_state;
static int keccak_position;
static unsigned char keccak_in[KECCAK_CHUNK];
static unsigned char keccak_out[32];

__attribute__((export_name("keccak_input"))) unsigned char *keccak_input(void) { return keccak_in; }
__attribute__((export_name("keccak_output"))) unsigned char *keccak_output(void) {
  return keccak_out;
}

__attribute__((export_name("keccak_reset"))) void keccak_reset(void) {
  for (int i = 0; i < 25; i++) keccak_state.lanes[i] = 0;
  keccak_position = 0;
}

/* Absorbs the first `length` (at most KECCAK_CHUNK) bytes of the input buffer; 0 when too long. */
__attribute__((export_name("keccak_update"))) int keccak_update(int length) {
  if (length < 0 || length > KECCAK_CHUNK) return 0;
  for (int i = 0; i < length; i++) {
    keccak_state.bytes[keccak_position++] ^= keccak_in[i];
    if (keccak_position == KECCAK_RATE) {
      keccakf(keccak_state.lanes);
      keccak_position = 0;
    }
  }
  return 1;
}

/* Pads, permutes and writes the 32-byte digest to the output buffer. */
__attribute__((export_name("keccak_final"))) void keccak_final(void) {
  keccak_state.bytes[keccak_position] ^= 0x01;
  keccak_state.bytes[KECCAK_RATE - 1] ^= 0x80;
  keccakf(keccak_state.lanes);
  for (int i = 0; i < 32; i++) keccak_out[i] = keccak_state.bytes[i];
}
