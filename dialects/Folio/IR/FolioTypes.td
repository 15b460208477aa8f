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

    `scale` says where quantization scales live:
    - `none`: unscaled float caches (f32, f16, bf16);
    - `per_tensor` / `per_head`: static scales, calibrated at compile time
      and passed to `folio.kv_write` and `folio.paged_attention` as their
      `scales(...)` operands (fp8 caches, and i8);
    - `per_token_head`: an asymmetric scale and zero point per token and
      head, computed when the slot is written and stored beside it (i8);
    - `per_token_group`: the same per `group` consecutive elements of a
      head (i8, i4; `group` divides head_dim, and is even for i4 so that a
      group fills whole bytes);
    - `kivi` (KIVI) for i2 caches: keys per channel over one block of
      tokens, values per token over groups of `group` channels (`group`
      divides head_dim, which is a multiple of 4); the runtime keeps the
      newest `residual` tokens of each sequence (> 0, whole blocks) in full
      precision outside the pool. (i4 with kivi is refused for now.)
    fp8 is never unscaled: an implicit scale of 1 would silently clip every
    value beyond the format's range.

    Example:

    ```mlir
    !folio.kv_cache<heads = 8, head_dim = 128, block = 16, dtype = f16>
    !folio.kv_cache<heads = 8, head_dim = 128, block = 16, dtype = i8,
                    scale = per_token_head>
    !folio.kv_cache<heads = 8, head_dim = 128, block = 16, dtype = i4,
                    scale = per_token_group, group = 32>
    !folio.kv_cache<heads = 8, head_dim = 128, block = 16, dtype = f8E4M3FN,
                    scale = per_head>
    !folio.kv_cache<heads = 2, head_dim = 64, block = 32, dtype = i2,
                    scale = kivi, residual = 128, group = 32>
    ```
  }];
  let parameters = (ins
    "unsigned":$heads,
    "unsigned":$head_dim,
    "unsigned":$block,
    "::mlir::Type":$dtype,
    DefaultValuedParameter<"::mlir::folio::ScaleLayout",
                           "::mlir::folio::ScaleLayout::none">:$scale,
    DefaultValuedParameter<"unsigned", "0">:$residual,
    DefaultValuedParameter<"unsigned", "0">:$group
  );
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// True if the cache stores quantized integer or fp8 elements.
    bool isQuantized() const;
    /// True if its scales are static (per_tensor, per_head): operands of
    /// the ops that write and read it, not data stored in it.
    bool hasStaticScales() const;
  }];
}

#endif // FOLIO_TYPES_TD
