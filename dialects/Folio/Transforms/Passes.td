//===- Passes.td - passes over folio ops only ------------*- tablegen -*-===//

#ifndef FOLIO_TRANSFORMS_PASSES_TD
#define FOLIO_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def FolioVerifyServingContractPass
    : Pass<"folio-verify-serving-contract", "::mlir::ModuleOp"> {
  let summary = "Checks that the module satisfies the serving contract";
  let description = [{
    The phase boundary after page-kv: `forward` has the contract's
    arguments in order with their types, one `!folio.kv_cache` per layer,
    each written by exactly one `folio.kv_write` and read by
    `folio.paged_attention`, returns one logits matrix, and holds no
    `folio.attention` or KV input/output of the imported graph.
  }];
}

#endif // FOLIO_TRANSFORMS_PASSES_TD
