//! Tests of `inductor`.

use super::*;

const IR: &str = r#"#loc = loc("/tmp/inductor_cache_shared/qr/cqrrf5.py":18:0)
#loc13 = loc("in_ptr0"(#loc))
module {
  tt.func public @triton_poi_k_1(%in_ptr0: !tt.ptr<f16> {tt.divisibility = 16 : i32} loc("in_ptr0"(#loc)), %out_ptr0: !tt.ptr<f32> {tt.divisibility = 16 : i32} loc("out_ptr0"(#loc)), %xnumel: i32 {tt.divisibility = 16 : i32} loc("xnumel"(#loc))) attributes {noinline = false} {
"#;

#[test]
fn reads_the_ir_entry_and_its_module() {
    assert_eq!(ir_module(IR).as_deref(), Some("cqrrf5.py"));
    assert_eq!(
        ir_params(IR, "triton_poi_k_1").unwrap(),
        vec![
            ("in_ptr0".to_string(), "*fp16".to_string()),
            ("out_ptr0".to_string(), "*fp32".to_string()),
            ("xnumel".to_string(), "i32".to_string()),
        ]
    );
    assert_eq!(ir_params(IR, "other"), None);
}

#[test]
fn reads_ptx_params_and_the_module_signature() {
    let ptx = ".visible .entry k(\n\t.param .u64 .ptr .global .align 1 k_param_0,\n\t.param .u32 k_param_1,\n\t.param .u64 .ptr .global .align 1 k_param_2\n)\n.reqntid 32\n";
    assert_eq!(ptx_param_count(ptx, "k"), Some(3));
    let py = "@triton.jit\ndef k(in_ptr0, out_ptr0, xnumel, XBLOCK : tl.constexpr):\n    pass\n";
    assert_eq!(
        module_signature(py, "k").unwrap(),
        vec![
            ("in_ptr0".into(), false),
            ("out_ptr0".into(), false),
            ("xnumel".into(), false),
            ("XBLOCK".into(), true)
        ]
    );
}
