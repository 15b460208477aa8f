// The argument struct of every generated kernel: each entry point takes
// one by value. Plain C++ with no CUDA types, so that host code (the
// executor, the device tests) includes this same file to fill them, and
// both sides agree on the layout by construction.
#ifndef FOLIO_CUDA_KERNEL_ARGS
#define FOLIO_CUDA_KERNEL_ARGS

namespace folio_cuda {

struct KVWriteArgs {
  const float *k;
  const float *v;
  long long kStride, vStride; // elements between tokens' rows
  const long long *slotMapping; // [numTokens]
  unsigned char *kCache, *vCache;
  unsigned short *kParams, *vParams; // int8 / int4
  const float *kScale, *vScale;      // fp8, [numKvHeads]
};

struct PagedDecodeArgs {
  const float *q; // [numTokens, numHeads, headDim]
  const unsigned char *kCache, *vCache;
  const unsigned short *kParams, *vParams; // int8 / int4
  const float *kScale, *vScale;            // fp8, [numKvHeads]
  const int *queryStartLoc;                // [numSeqs + 1]
  const int *seqLens;                      // [numSeqs]
  const int *blockTables;                  // [numSeqs, maxBlocksPerSeq]
  int maxBlocksPerSeq;
  int numSeqs;
  float scale;
  int slidingWindow; // 0: none
  float softCap;     // 0: none
  int numPartitions;
  float *out;        // [numTokens, numHeads, headDim]
  float *partialOut; // [numTokens, numHeads, numPartitions, headDim]
  float *partialMax, *partialSum; // [numTokens, numHeads, numPartitions]
};

struct PagedPrefillArgs {
  const float *q; // [numTokens, numHeads, headDim]
  const unsigned char *kCache, *vCache;
  const unsigned short *kParams, *vParams; // int8 / int4
  const float *kScale, *vScale;            // fp8, [numKvHeads]
  const int *queryStartLoc;                // [numSeqs + 1]
  const int *seqLens;                      // [numSeqs]
  const int *blockTables;                  // [numSeqs, maxBlocksPerSeq]
  int maxBlocksPerSeq;
  float scale;
  int slidingWindow; // 0: none
  float softCap;     // 0: none
  float *out;        // [numTokens, numHeads, headDim]
};

struct RowArgs {
  const float *in[8];
  long long inStride[8]; // elements between rows (Row inputs)
  float *out[4];
  long long outStride[4];
};

struct RotaryArgs {
  const float *x;
  float *y; // may equal x
  long long xStride, yStride; // elements between tokens
  const long long *positions; // [tokens]
  const float *cosSin;        // [table positions, rotaryDim]
};

struct GatherArgs {
  const void *table;          // [rows, dim]; int4: [rows, 64 * ceil(dim / 128)]
  long long tableRows;
  const long long *ids;       // embedding: [numRows]
  const int *indices;         // gather_rows: [numRows]
  float scale;                // embedding only
  float *out;                 // [numRows, dim]
  int *error;
  // A stored (packed) table only:
  const float *scales;               // int8, fp8: [rows]
  const unsigned short *groupParams; // int4: f16 [rows, groups, 2]
  const int *outlierCols;            // int8: [numOutliers], < dim
  const unsigned short *outliers;    // int8: bf16 [rows, numOutliers]
  int numOutliers;                   // int8 only; 0 elsewhere
};

/// The most top alternatives the logprobs kernel reports per row (OpenAI's
/// limit, runtime/Sampler's kMaxLogprobs): its output rows' stride.
constexpr int kMaxTopLogprobs = 20;

/// What a draw or a verification decided about one row, for the logprobs
/// kernel after it: the keep set of temperature, min-p, top-k and top-p
/// (Sample.cuh's KeepSet) and, after a draw, the log-sum-exp of the kept
/// l / temperature. Rebuilding the keep set takes a radix selection (32
/// passes over the row) each for top-k and top-p, so the sampler records it
/// once for both kernels.
struct RowKeep {
  double best;      // the largest kept l / temperature
  double minPFloor; // min-p: l / temperature at or above it
  double lse;       // kRowKeepLse only
  unsigned kKey;    // top-k: ordered keys at or above it
  unsigned pKey;    // top-p: keys above it, and its ties up to lastTie
  int lastTie;
  int flags; // kRowKeepSet | kRowKeepLse, 0: nothing (greedy, refused)
};
constexpr int kRowKeepSet = 1;
constexpr int kRowKeepLse = 2;

struct SampleArgs {
  const float *logits; // [rows, vocab], rows `stride` elements apart
  long long stride;
  int vocab;
  int *tokens; // [rows]
  // Top-k / top-p only, per row: temperature (> 0, or 0 for a greedy row:
  // its other settings are not read), top_k (<= 0: off), top_p (>= 1:
  // off), the uniform in [0, 1) of the draw, and min_p in [0, 1] (0: off;
  // a null array is off for every row).
  const float *temperature;
  const int *topK;
  const float *topP;
  const double *uniform;
  const float *minP;
  // Verification only (verifyOneHot): one block per sequence over its
  // numDraft + 1 logits rows ([S, numDraft + 1] rows); the arrays above are
  // per sequence (uniform unused) and tokens is [S, numDraft + 1].
  int numDraft;
  const int *drafts;     // [S, numDraft], -1 padding the end
  const float *uniforms; // [S, numDraft + 1] in [0, 1): draft j's test, then
                         // the draw
  int *accepted;         // [S]: drafts kept, -1 for a faulty row
  // A draft model's probabilities q, rows of `vocab`: the draw writes row
  // r's q (the distribution it drew from, as runtime/Sampler's draft
  // proposer reports it) to row probRows[r] where that is >= 0; the
  // verifier reads sequence s's q_j at row probRows[s] + j where that is
  // >= 0 (else q_j is one-hot at the draft). Null: none written or read.
  float *probs;
  const int *probRows;
  // Penalties only (penalizeRows), per row: the row rewritten in place
  // (`logits` is not read), its entries penaltyStart[r] to
  // penaltyStart[r + 1] of (penaltyTokens, penaltyCounts): each token the
  // penalties touch and its count in the output; repetition (1: off),
  // frequency and presence penalties.
  float *penalized;
  const int *penaltyStart; // [rows + 1]
  const int *penaltyTokens;
  const int *penaltyCounts;
  const float *repetition;
  const float *frequency;
  const float *presence;
  // Logprobs only (rowLogprobs), per row, after the draw with the
  // settings above: `tokens` holds the drawn token (read; -1 skips the
  // row), numTop how many top alternatives to report (-1: the row asks for
  // no logprobs; at most kMaxTopLogprobs). Out: the token's logprob, and
  // [rows, kMaxTopLogprobs] tokens and logprobs, the first numTop of each
  // row written. With numDraft > 0, after a verification: the settings and
  // numTop are per sequence of numDraft + 1 rows.
  const int *numTop;
  float *logprob;
  int *topTokens;
  float *topLogprobs;
  // Where set, one entry per row: the draw (top-k / top-p) and the
  // verifier write every row's (their rows' layout; flags 0 where they
  // kept no set), and the logprobs kernel reads them instead of rebuilding
  // the keep sets. Null: the draw and verifier write none, and the logprobs
  // kernel rebuilds them.
  RowKeep *keep;
};

struct LinearArgs {
  const float *x;                    // [m, k], rows 16-byte aligned
  long long m;                       // token rows (0: nothing to do)
  const void *w;                     // [n, k] of the weight type; int4:
                                     // [n, 64 * ceil(k / 128)] bytes
  const float *scales;               // int8, fp8: [n]
  const unsigned short *groupParams; // int4: f16 [n, groups, 2]
  const int *outlierCols;            // int8: [numOutliers], < k
  const unsigned short *outliers;    // int8: bf16 [n, numOutliers]
  int numOutliers;                   // int8 only; 0 elsewhere
  const float *bias;                 // [n] or null
  float *y;                          // [m, n]
  long long n;
  float *xScales; // quantizeXToFp8: [m] out (y holds the e4m3 codes [m, k])
};

struct CastArgs {
  const void *in; // [n] of the source type
  void *out;      // [n] of the target type
  long long n;
};

} // namespace folio_cuda

#endif // FOLIO_CUDA_KERNEL_ARGS
