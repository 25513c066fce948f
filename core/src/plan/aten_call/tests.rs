//! Tests of `aten_call`.

use super::*;

fn t(dims: &[i64], dtype: ElemType) -> AtenArg {
    AtenArg::Tensor(TensorArg {
        strides: kc_ir::TensorSpec::contiguous_strides(dims),
        dims: dims.to_vec(),
        dtype,
        slot: 0,
    })
}

fn s(v: &str) -> AtenArg {
    AtenArg::Scalar {
        ty: "Scalar".into(),
        value: v.into(),
    }
}

#[test]
fn indices_stay_within_what_they_index() {
    let c = build(
        "aten::index_select",
        &[
            t(&[250880, 1024], ElemType::F16),
            s("0"),
            t(&[5], ElemType::I64),
        ],
        &[],
    )
    .unwrap();
    assert!(matches!(&c.args[2], CallArg::Tensor(x) if x.fill == Fill::Indices { high: 250880 }));
    assert_eq!(c.outputs, Outputs::OutVariant("out".into()));
    let c = build(
        "aten::nll_loss_forward",
        &[
            t(&[2048, 50257], ElemType::F32),
            t(&[2048], ElemType::I64),
            AtenArg::None,
            s("1"),
            s("-100"),
        ],
        &[],
    )
    .unwrap();
    assert!(matches!(&c.args[1], CallArg::Tensor(x) if x.fill == Fill::Indices { high: 50257 }));
    assert_eq!(c.args[4], CallArg::Int(-100));
    assert_eq!(c.args[2], CallArg::None);
    let c = build(
        "aten::gather",
        &[
            t(&[50257, 768], ElemType::F32),
            s("-1"),
            t(&[2048, 768], ElemType::I64),
            s("False"),
        ],
        &[],
    )
    .unwrap();
    assert!(matches!(&c.args[2], CallArg::Tensor(x) if x.fill == Fill::Indices { high: 768 }));
    // An index that is recorded as floating point is refused, not guessed.
    assert!(build(
        "aten::embedding",
        &[
            t(&[10, 4], ElemType::F16),
            t(&[3], ElemType::F16),
            s("-1"),
            s("False"),
            s("False")
        ],
        &[]
    )
    .is_err());
}

#[test]
fn dtypes_are_inferred_never_guessed() {
    let list = AtenArg::TensorList(vec![
        TensorArg {
            dims: vec![2, 3],
            strides: vec![3, 1],
            dtype: ElemType::Unknown,
            slot: 1,
        },
        TensorArg {
            dims: vec![4, 3],
            strides: vec![3, 1],
            dtype: ElemType::Unknown,
            slot: 2,
        },
    ]);
    let kernels = [
        "void at::native::CatArrayBatchedCopy<c10::BFloat16, unsigned int, 2, 64, 64>(...)"
            .to_string(),
    ];
    let c = build("aten::cat", &[list.clone(), s("0")], &kernels).unwrap();
    match &c.args[0] {
        CallArg::TensorList(ts) => assert!(ts.iter().all(|t| t.dtype == ElemType::BF16)),
        other => panic!("{other:?}"),
    }
    let e = build("aten::cat", &[list, s("0")], &[]).unwrap_err();
    assert!(e.contains("dtype"), "{e}");
    let e = build(
        "aten::_foreach_add_",
        &[AtenArg::TensorList(vec![]), s("1e-08")],
        &[],
    )
    .unwrap_err();
    assert!(e.contains("without its tensors' shapes"), "{e}");
}

#[test]
fn scalars_are_typed_by_the_schema() {
    assert_eq!(parse_scalar("Scalar", "1.").unwrap(), CallArg::Float(1.0));
    assert_eq!(
        parse_scalar("Scalar", "0.10000000000000001").unwrap(),
        CallArg::Float(0.1)
    );
    assert_eq!(
        parse_scalar("Scalar", "False").unwrap(),
        CallArg::Bool(false)
    );
    assert!(parse_scalar("Scalar", "").is_err());
    assert_eq!(
        typed_list(&SchemaType::List(Box::new(SchemaType::Int), None), "[3, 3]").unwrap(),
        CallArg::IntList(vec![3, 3])
    );
    assert_eq!(
        typed_list(
            &SchemaType::List(Box::new(SchemaType::Bool), Some(3)),
            "[True, True, False]"
        )
        .unwrap(),
        CallArg::BoolList(vec![true, true, false])
    );
    // A float where the schema says float, even when written as an integer.
    let c = build(
        "aten::native_batch_norm",
        &[
            t(&[8, 64, 56, 56], ElemType::F16),
            t(&[64], ElemType::F32),
            t(&[64], ElemType::F32),
            t(&[64], ElemType::F32),
            t(&[64], ElemType::F32),
            s("False"),
            s("0"),
            s("1e-05"),
        ],
        &[],
    )
    .unwrap();
    assert_eq!(c.args[6], CallArg::Float(0.0));
    assert_eq!(c.args[5], CallArg::Bool(false));
    assert_eq!(c.outputs, Outputs::OutVariant("out".into()));
    assert_eq!(c.schema_name(), "aten::native_batch_norm");
}

#[test]
fn every_argument_is_known_or_the_call_is_refused() {
    let x = || t(&[4, 8], ElemType::F16);
    // add(x, y, alpha=2): the dispatcher takes any alpha.
    let c = build("aten::add", &[x(), x(), s("2")], &[]).unwrap();
    assert_eq!(c.overload, "Tensor");
    assert_eq!(c.args[2], CallArg::Int(2));
    assert_eq!(c.outputs, Outputs::OutVariant("out".into()));
    assert_eq!(
        build("aten::add_", &[x(), x(), s("1")], &[])
            .unwrap()
            .outputs,
        Outputs::InPlace
    );
    let e = build("aten::index", &[x(), AtenArg::None], &[]).unwrap_err();
    assert!(e.contains("not recorded"), "{e}");
    // gelu's approximation is a string Kineto does not record: the schema default.
    let c = build("aten::gelu", &[x(), AtenArg::None], &[]).unwrap();
    assert_eq!(c.args[1], CallArg::Str("none".into()));
    assert_eq!(c.assumed, vec!["approximate=\"none\"".to_string()]);
    // einsum's equation has no default: refused, never guessed.
    let e = build(
        "aten::einsum",
        &[AtenArg::None, AtenArg::TensorList(vec![]), AtenArg::None],
        &[],
    )
    .unwrap_err();
    assert!(e.contains("str equation") || e.contains("shapes"), "{e}");
    // A 0-dim operand is a CPU scalar only where the kernel shows a scalar functor.
    let k = ["void at::native::vectorized_elementwise_kernel<8, at::native::AUnaryFunctor<c10::Half, c10::Half, c10::Half, at::native::binary_internal::MulFunctor<float> > >".to_string()];
    let c = build("aten::mul", &[x(), t(&[], ElemType::F64)], &k).unwrap();
    assert!(matches!(&c.args[1], CallArg::Tensor(t) if t.host_scalar && t.fill == Fill::Ones));
    let c = build("aten::mul", &[x(), t(&[], ElemType::F64)], &[]).unwrap();
    assert!(matches!(&c.args[1], CallArg::Tensor(t) if !t.host_scalar));
    // `1 - x`, traced as sub(I64[], x): `self` is the scalar where the kernel is the form
    // for one (BLOOM's GELU backward); not where the kernel takes the scalar as `other`.
    let on_other = ["void at::native::vectorized_elementwise_kernel<8, at::native::CUDAFunctorOnOther_add<c10::BFloat16>, std::array<char*, 2ul> >".to_string()];
    let one = AtenArg::Scalar {
        ty: "Scalar".into(),
        value: "1".into(),
    };
    let c = build(
        "aten::sub",
        &[t(&[], ElemType::I64), x(), one.clone()],
        &on_other,
    )
    .unwrap();
    assert!(matches!(&c.args[0], CallArg::Tensor(t) if t.host_scalar && t.fill == Fill::Ones));
    assert!(matches!(&c.args[1], CallArg::Tensor(t) if !t.host_scalar));
    let on_self = [on_other[0].replace("OnOther", "OnSelf")];
    let c = build(
        "aten::sub",
        &[t(&[], ElemType::I64), x(), one.clone()],
        &on_self,
    )
    .unwrap();
    assert!(matches!(&c.args[0], CallArg::Tensor(t) if !t.host_scalar));
    let c = build("aten::sub", &[x(), t(&[], ElemType::I64), one], &on_self).unwrap();
    assert!(matches!(&c.args[1], CallArg::Tensor(t) if t.host_scalar));
    // Out forms that libtorch generates as "run, then copy" are not used.
    let ln = build(
        "aten::native_layer_norm",
        &[
            x(),
            AtenArg::ScalarList {
                ty: "ScalarList".into(),
                value: "[8]".into(),
            },
            t(&[8], ElemType::F16),
            t(&[8], ElemType::F16),
            s("1e-05"),
        ],
        &[],
    )
    .unwrap();
    assert_eq!(ln.outputs, Outputs::Allocates);
    let e = build("aten::frobnicate", &[x()], &[]).unwrap_err();
    assert!(e.contains("registry"), "{e}");
}

/// A grouped GEMM's offsets are never drawn: non-decreasing group ends along the grouped
/// dimension, which the operands' ranks tell.
#[test]
fn grouped_gemm_offsets_are_even_group_ends() {
    let c = build(
        "aten::_grouped_mm",
        &[
            t(&[512, 1024], ElemType::BF16),
            t(&[8, 1024, 2816], ElemType::BF16),
            t(&[8], ElemType::I32),
            AtenArg::None,
            AtenArg::None,
        ],
        &[],
    )
    .unwrap();
    assert!(matches!(&c.args[2], CallArg::Tensor(x) if x.fill == Fill::Offsets { total: 512 }));
    assert_eq!(
        even_offsets(512, 8),
        [64, 128, 192, 256, 320, 384, 448, 512]
    );
    assert_eq!(even_offsets(10, 4), [2, 5, 7, 10]);
    // 3-D x 2-D: along mat2's columns.
    let c = build(
        "aten::_grouped_mm",
        &[
            t(&[4, 64, 128], ElemType::BF16),
            t(&[128, 1000], ElemType::BF16),
            t(&[4], ElemType::I32),
            AtenArg::None,
            AtenArg::None,
        ],
        &[],
    )
    .unwrap();
    assert!(matches!(&c.args[2], CallArg::Tensor(x) if x.fill == Fill::Offsets { total: 1000 }));
}

/// Every overload of `op` (without its namespace), by name.
fn overloads(op: &str) -> Vec<String> {
    let all = crate::lower::aten_schema::registry().overloads(&format!("aten::{op}"));
    assert!(!all.is_empty(), "{op} is in the registry");
    all.iter().map(|s| s.overload.clone()).collect()
}

#[test]
fn in_place_ops_write_their_first_argument_as_their_schema_says() {
    for op in [
        "add_",
        "masked_fill_",
        "_index_put_impl_",
        "copy_",
        "__iand__",
        "__ilshift__",
    ] {
        for o in overloads(op) {
            assert!(writes(op, &o, 0), "{op}.{o} writes its first argument");
            assert!(!writes(op, &o, 1), "{op}.{o} reads its second");
        }
    }
    for op in [
        "add",
        "_grouped_mm",
        "embedding",
        "__and__",
        "__lshift__",
        "where",
    ] {
        for o in overloads(op) {
            assert!(!writes(op, &o, 0), "{op}.{o} writes a new result");
        }
    }
    // A model's own `out=` call writes its `out`, not its first argument.
    let add_out = crate::lower::aten_schema::registry()
        .find("aten::add", "out")
        .expect("add.out");
    let out = add_out.args.iter().position(|a| a.name == "out").unwrap();
    assert!(writes("add", "out", out) && !writes("add", "out", 0));
}

#[test]
fn an_in_place_op_on_integers_writes_integers_and_one_on_floats_does_not() {
    let ints = build(
        "aten::add_",
        &[t(&[8, 8], ElemType::I64), t(&[8, 8], ElemType::I64), s("1")],
        &[],
    )
    .unwrap();
    assert!(ints.writes_integers());
    let floats = build(
        "aten::add_",
        &[t(&[8, 8], ElemType::F32), t(&[8, 8], ElemType::F32), s("1")],
        &[],
    )
    .unwrap();
    assert!(!floats.writes_integers());
    // Reading integers (indices) without writing them is not writing them.
    let select = build(
        "aten::index_select",
        &[t(&[16, 4], ElemType::F16), s("0"), t(&[5], ElemType::I64)],
        &[],
    )
    .unwrap();
    assert!(!select.writes_integers());
}

#[test]
fn a_bound_read_takes_its_producers_result_unless_recorded_values_or_its_own_region_serve_it() {
    let c = build(
        "aten::index_select",
        &[t(&[16, 4], ElemType::F16), s("0"), t(&[5], ElemType::I64)],
        &[],
    )
    .unwrap();
    let (table, idx) = match (&c.args[0], &c.args[2]) {
        (CallArg::Tensor(a), CallArg::Tensor(b)) => (a, b),
        _ => panic!("tensors"),
    };
    assert!(placeable(table) && !placeable(idx));
    // Indices, never placed: the producer's result, unless recorded values fill them and
    // the step does not write them.
    assert!(takes_bound_result(idx, false, false, false));
    assert!(!takes_bound_result(idx, true, false, false));
    assert!(takes_bound_result(idx, true, true, false));
    // A float tensor the plan could place: the result where it was placed, else its own
    // region.
    assert!(takes_bound_result(table, false, false, true));
    assert!(!takes_bound_result(table, false, false, false));
}

/// `histc` allocates, as the model's functional call does: its CUDA `.out` kernel computes
/// into a temporary and copies (PyTorch's `_histc_out_cuda`), a copy the trace does not
/// hold (session 49: one an invocation in Mixtral's and Qwen3-MoE's routing). An op whose
/// `.out` kernel is its own keeps it.
#[test]
fn an_op_whose_out_kernel_copies_allocates_as_the_model_did() {
    let h = build(
        "aten::histc",
        &[t(&[32], ElemType::F32), s("8"), s("0"), s("7")],
        &[],
    )
    .unwrap();
    assert_eq!(h.outputs, Outputs::Allocates);
    assert!(aten_schema::registry()
        .overloads("aten::histc")
        .iter()
        .any(|o| o.overload == "out" && o.cuda_out_kernel));
    let c = build(
        "aten::cumsum",
        &[t(&[8], ElemType::F32), s("0"), AtenArg::None],
        &[],
    )
    .unwrap();
    assert_eq!(c.outputs, Outputs::OutVariant("out".into()));
}
