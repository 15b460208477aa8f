// RUN: folio-opt %s --verify-diagnostics --folio-set-target="target=sm_90a"

// Tests that a module configured for one target is not silently re-targeted.

// expected-error @+1 {{module is already configured with "folio.target" = "cpu"; refusing to change it to "sm_90a"}}
module attributes {folio.target = "cpu"} {
}
