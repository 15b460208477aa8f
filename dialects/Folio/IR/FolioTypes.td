//===- FolioTypes.td - folio dialect types -----------------*- tablegen -*-===//

#ifndef FOLIO_TYPES_TD
#define FOLIO_TYPES_TD

include "FolioBase.td"

class Folio_Type<string name, string typeMnemonic, list<Trait> traits = []>
    : TypeDef<Folio_Dialect, name, traits> {
  let mnemonic = typeMnemonic;
}

def Folio_KVCacheType : Folio_Type<"KVCache", "kv_cache"> {
  let summary = "one layer's paged K and V block pool";
  let description = [{
    The K and V pools of one attention layer, split into blocks of `block`
    token slots. Each slot holds `heads` x `head_dim` elements of `dtype` for
    K and for V. The number of blocks is a runtime quantity (the KV memory
    budget), so it is not part of the type.

    `scale` says where quantization scales live: `none` for unscaled float
    caches (f32, f16, bf16, and fp8 with an implicit scale of 1),
    `per_tensor` / `per_head` for static scales, `per_token_head` for scales
    stored beside each slot, and `kivi` (KIVI: keys per channel, values per
    token) for int4/int2 caches, which keep the newest `residual` tokens of
    each sequence in full precision.

    Example:

    ```mlir
    !folio.kv_cache<heads = 8, head_dim = 128, block = 16, dtype = f16>
    !folio.kv_cache<heads = 8, head_dim = 128, block = 16, dtype = i8,
                    scale = per_token_head>
    !folio.kv_cache<heads = 2, head_dim = 64, block = 32, dtype = i2,
                    scale = kivi, residual = 32>
    ```
  }];
  let parameters = (ins
    "unsigned":$heads,
    "unsigned":$head_dim,
    "unsigned":$block,
    "::mlir::Type":$dtype,
    DefaultValuedParameter<"::mlir::folio::ScaleLayout",
                           "::mlir::folio::ScaleLayout::none">:$scale,
    DefaultValuedParameter<"unsigned", "0">:$residual
  );
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// True if the cache stores quantized integer or fp8 elements.
    bool isQuantized() const;
  }];
}

#endif // FOLIO_TYPES_TD
