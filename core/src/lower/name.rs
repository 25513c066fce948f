//! Kernel-name parsing (nom). Demangled C++ names (`void ns::kernel<8, Functor<c10::Half>>(int, ...)`,
//! `(anonymous namespace)`, lambdas, `std::enable_if<...>::type` return types) become a
//! scope, a base name and top-level template arguments; vendor names (nvjet, cutlass,
//! xmma, ampere/sm80 cuBLAS, cuDNN, flash/sdpa attention, NCCL, Triton) additionally yield
//! their library, tile shapes, layout letters and flags.
//!
//! Invariant: parsing never fails. A name that does not fit the grammar is kept whole as
//! an opaque base name, and classification falls back on the launching op.

use kc_ir::DType;
use nom::{
    branch::alt,
    bytes::complete::{tag, take_while1},
    combinator::recognize,
    multi::separated_list1,
    sequence::pair,
    IResult, Parser,
};
use serde::Serialize;

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct VendorInfo {
    /// nvjet, cutlass, xmma, cublas, cublasLt, cudnn, flash, nccl, triton.
    pub library: String,
    /// SM target if named (`sm90`).
    pub sm: Option<u32>,
    /// Tile shapes such as `64x8`, `128x128`.
    pub tiles: Vec<String>,
    /// Layout letters as written (`TNT`, `tn`, `nn`).
    pub layout: Option<String>,
    /// Other name tokens that change behaviour: bias, splitK, relu, gelu, coopA...
    pub flags: Vec<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ParsedName {
    /// Namespaces and enclosing classes, outermost first.
    pub scope: Vec<String>,
    /// The unqualified kernel name without template arguments.
    pub base: String,
    /// Top-level template arguments, as written.
    pub template_args: Vec<String>,
    /// Element types mentioned anywhere in the template arguments, in order of appearance.
    pub dtypes: Vec<DType>,
    /// Integer template arguments (vector widths, block sizes).
    pub int_args: Vec<i64>,
    pub vendor: Option<VendorInfo>,
    /// The name did not fit the C++ grammar and is kept whole in `base`.
    pub opaque: bool,
}

/// Skips a balanced bracket group starting at `open`, honouring nested `<>`, `()`, `{}`,
/// `[]`. `->` and `operator<`-style tokens are rare in kernel names and handled by the
/// fallback to an opaque name.
fn balanced(open: char, close: char) -> impl Fn(&str) -> IResult<&str, &str> {
    move |input: &str| {
        let mut depth = 0i32;
        for (i, c) in input.char_indices() {
            if i == 0 && c != open {
                return Err(nom::Err::Error(nom::error::Error::new(
                    input,
                    nom::error::ErrorKind::Char,
                )));
            }
            match c {
                '<' | '(' | '{' | '[' => depth += 1,
                '>' | ')' | '}' | ']' => {
                    depth -= 1;
                    if depth == 0 {
                        if c != close {
                            break;
                        }
                        return Ok((&input[i + 1..], &input[..i + 1]));
                    }
                }
                _ => {}
            }
        }
        Err(nom::Err::Error(nom::error::Error::new(
            input,
            nom::error::ErrorKind::Char,
        )))
    }
}

fn ident(input: &str) -> IResult<&str, &str> {
    take_while1(|c: char| c.is_ascii_alphanumeric() || c == '_' || c == '~' || c == '$' || c == '.')(
        input,
    )
}

/// One `::`-separated segment: an identifier, `(anonymous namespace)`, a `{lambda(...)#N}`,
/// or `operator()`, optionally followed by template arguments.
fn segment(input: &str) -> IResult<&str, (&str, Option<&str>)> {
    let (rest, name) = alt((
        tag("(anonymous namespace)"),
        recognize(pair(
            tag("operator"),
            alt((
                tag("()"),
                tag("[]"),
                take_while1(|c: char| "+-*/=<>!".contains(c)),
            )),
        )),
        balanced('{', '}'),
        ident,
    ))
    .parse(input)?;
    match balanced('<', '>')(rest) {
        Ok((rest2, targs)) => Ok((rest2, (name, Some(targs)))),
        Err(_) => Ok((rest, (name, None))),
    }
}

fn qualified(input: &str) -> IResult<&str, Vec<(&str, Option<&str>)>> {
    separated_list1(tag("::"), segment).parse(input)
}

/// Splits `<a, b<c, d>, e>` into its top-level arguments.
fn split_template_args(targs: &str) -> Vec<String> {
    let inner = &targs[1..targs.len().saturating_sub(1)];
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut start = 0;
    for (i, c) in inner.char_indices() {
        match c {
            '<' | '(' | '{' | '[' => depth += 1,
            '>' | ')' | '}' | ']' => depth -= 1,
            ',' if depth == 0 => {
                out.push(inner[start..i].trim().to_string());
                start = i + 1;
            }
            _ => {}
        }
    }
    let last = inner[start..].trim();
    if !last.is_empty() {
        out.push(last.to_string());
    }
    out
}

/// Element types named in C++ template text.
fn dtypes_in(text: &str) -> Vec<DType> {
    const NAMES: [(&str, DType); 12] = [
        ("c10::Half", DType::F16),
        ("__half", DType::F16),
        ("c10::BFloat16", DType::BF16),
        ("__nv_bfloat16", DType::BF16),
        ("c10::Float8_e4m3fn", DType::F8E4M3),
        ("c10::Float8_e5m2", DType::F8E5M2),
        ("double", DType::F64),
        ("float", DType::F32),
        ("long", DType::I64),
        ("int", DType::I32),
        ("bool", DType::Bool),
        ("unsigned char", DType::U8),
    ];
    let mut found: Vec<(usize, DType)> = Vec::new();
    for (n, d) in NAMES {
        let mut from = 0;
        while let Some(i) = text[from..].find(n) {
            let at = from + i;
            let before = text[..at].chars().next_back();
            let after = text[at + n.len()..].chars().next();
            let word = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_');
            if !word(before) && !word(after) && !found.iter().any(|(p, _)| *p <= at && at < p + 3) {
                found.push((at, d));
            }
            from = at + n.len();
        }
    }
    found.sort_by_key(|(p, _)| *p);
    let mut out: Vec<DType> = Vec::new();
    for (_, d) in found {
        if !out.contains(&d) {
            out.push(d);
        }
    }
    out
}

fn sm_of(tok: &str) -> Option<u32> {
    tok.strip_prefix("sm")
        .or_else(|| tok.strip_prefix("cutlass_"))
        .and_then(|s| s.parse().ok())
}

fn is_tile(tok: &str) -> bool {
    let parts: Vec<&str> = tok.split('x').collect();
    parts.len() >= 2
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()))
}

const FLAG_WORDS: [&str; 14] = [
    "bias", "splitK", "splitk", "relu", "gelu", "coopA", "coopB", "bz", "v", "aux", "stages",
    "ldg8", "f2f", "align1",
];

/// Vendor-name details from an underscore-separated library name.
fn vendor_of(name: &str) -> Option<VendorInfo> {
    let lower = name.to_ascii_lowercase();
    let library = if name.starts_with("nvjet") {
        "nvjet"
    } else if name.starts_with("nccl") || name.starts_with("rccl") {
        "nccl"
    } else if name.starts_with("triton") {
        "triton"
    } else if lower.contains("flash") || lower.contains("fmha") || lower.contains("sdpa") {
        "flash"
    } else if name.starts_with("cudnn")
        || name.starts_with("bn_")
        || lower.contains("fprop")
        || lower.contains("dgrad")
        || lower.contains("wgrad")
    {
        "cudnn"
    } else if lower.contains("xmma") {
        "xmma"
    } else if name.starts_with("cutlass") {
        "cutlass"
    } else if name.starts_with("ampere")
        || name.starts_with("volta")
        || name.starts_with("turing")
        || name.starts_with("sm80")
        || name.starts_with("sm90")
        || name.starts_with("maxwell")
        || lower.contains("gemm")
    {
        "cublas"
    } else {
        return None;
    };
    let mut v = VendorInfo {
        library: library.to_string(),
        ..Default::default()
    };
    let toks: Vec<&str> = name.split('_').collect();
    for (i, t) in toks.iter().enumerate() {
        if v.sm.is_none() {
            v.sm = sm_of(t);
        }
        if is_tile(t) {
            v.tiles.push(t.to_string());
        } else if FLAG_WORDS.contains(t) {
            v.flags.push(t.to_string());
        } else if i == toks.len() - 1
            && !t.is_empty()
            && t.len() <= 3
            && t.chars().all(|c| matches!(c, 'T' | 'N' | 't' | 'n'))
        {
            v.layout = Some(t.to_string());
        } else if i + 1 < toks.len()
            && toks.len() > 2
            && t.len() == 2
            && t.chars().all(|c| matches!(c, 't' | 'n'))
        {
            // ampere_..._tn style layouts appear before a trailing qualifier.
            v.layout.get_or_insert_with(|| t.to_string());
        }
    }
    Some(v)
}

/// Parses a kernel name. Never fails.
pub fn parse(name: &str) -> ParsedName {
    let trimmed = name.trim();
    // Strip the parameter list: the last top-level "(...)" at the end.
    let without_params = strip_params(trimmed);
    // Strip a return type: what comes before the last top-level space.
    let qualified_text = last_top_level_token(without_params);
    let mut p = ParsedName::default();
    match qualified(qualified_text) {
        Ok(("", segs)) => {
            let (last, targs) = segs[segs.len() - 1];
            p.scope = segs[..segs.len() - 1]
                .iter()
                .map(|(n, _)| n.to_string())
                .collect();
            p.base = last.to_string();
            if let Some(t) = targs {
                p.template_args = split_template_args(t);
                p.dtypes = dtypes_in(t);
                p.int_args = p
                    .template_args
                    .iter()
                    .filter_map(|a| a.trim_end_matches(['l', 'u']).parse().ok())
                    .collect();
            }
        }
        _ => {
            p.base = trimmed.to_string();
            p.opaque = true;
        }
    }
    // Vendor names live in the base (nvjet_..., ampere_...) or, for cutlass::Kernel2<...>,
    // in the first template argument.
    p.vendor = vendor_of(&p.base).or_else(|| p.template_args.first().and_then(|a| vendor_of(a)));
    if p.vendor.is_some() && p.dtypes.is_empty() {
        p.dtypes = vendor_dtypes(
            &p.base,
            p.template_args.first().map(|s| s.as_str()).unwrap_or(""),
        );
    }
    p
}

/// Types spelled in vendor names: `hsh`/`tst` (nvjet), `bf16`, `fp16`, `f16`, `s1688gemm`.
fn vendor_dtypes(base: &str, first_targ: &str) -> Vec<DType> {
    let text = format!("{base}_{first_targ}");
    let mut out = Vec::new();
    for t in text.split('_') {
        let d = match t {
            "bf16" | "tst" | "bf16bf16" => Some(DType::BF16),
            "fp16" | "f16" | "hsh" | "hhh" | "h" => Some(DType::F16),
            "fp32" | "f32" | "sss" | "sgemm" => Some(DType::F32),
            "e4m3" => Some(DType::F8E4M3),
            _ => None,
        };
        if let Some(d) = d {
            if !out.contains(&d) {
                out.push(d);
            }
        }
    }
    out
}

fn strip_params(s: &str) -> &str {
    if !s.ends_with(')') {
        return s;
    }
    let mut depth = 0i32;
    for (i, c) in s.char_indices().rev() {
        match c {
            ')' | '>' | '}' | ']' => depth += 1,
            '(' | '<' | '{' | '[' => {
                depth -= 1;
                if depth == 0 {
                    // `operator()(...)` and `{lambda()#1}` keep their own parentheses.
                    return s[..i].trim_end();
                }
            }
            _ => {}
        }
    }
    s
}

fn last_top_level_token(s: &str) -> &str {
    let mut depth = 0i32;
    let mut start = 0;
    for (i, c) in s.char_indices() {
        match c {
            '<' | '(' | '{' | '[' => depth += 1,
            '>' | ')' | '}' | ']' => depth -= 1,
            ' ' if depth == 0 => start = i + 1,
            _ => {}
        }
    }
    // `(anonymous namespace)` contains a space at depth 1, so it is never split.
    &s[start..]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aten_elementwise() {
        let p = parse("void at::native::vectorized_elementwise_kernel<8, at::native::CUDAFunctor_add<c10::Half>, std::array<char*, 3ul> >(int, at::native::CUDAFunctor_add<c10::Half>, std::array<char*, 3ul>)");
        assert!(!p.opaque);
        assert_eq!(p.scope, vec!["at", "native"]);
        assert_eq!(p.base, "vectorized_elementwise_kernel");
        assert_eq!(p.template_args.len(), 3);
        assert_eq!(p.int_args, vec![8]);
        assert_eq!(p.dtypes, vec![DType::F16]);
    }

    #[test]
    fn anonymous_namespace_and_lambdas() {
        let p = parse("void at::native::(anonymous namespace)::indexSelectSmallIndex<c10::Half, long, unsigned int, 2, 2, -2>(at::cuda::detail::TensorInfo<c10::Half, unsigned int>, long)");
        assert_eq!(p.scope, vec!["at", "native", "(anonymous namespace)"]);
        assert_eq!(p.base, "indexSelectSmallIndex");
        assert_eq!(p.dtypes, vec![DType::F16, DType::I64, DType::I32]);
        let q = parse("void at::native::elementwise_kernel<128, 4, at::native::gpu_kernel_impl_nocast<at::native::CUDAFunctor_add<c10::BFloat16> >(at::TensorIteratorBase&, at::native::CUDAFunctor_add<c10::BFloat16> const&)::{lambda(int)#1}>(int, at::native::gpu_kernel_impl_nocast<at::native::CUDAFunctor_add<c10::BFloat16> >(at::TensorIteratorBase&, at::native::CUDAFunctor_add<c10::BFloat16> const&)::{lambda(int)#1})");
        assert!(!q.opaque, "{q:?}");
        assert_eq!(q.base, "elementwise_kernel");
        assert_eq!(q.int_args, vec![128, 4]);
    }

    #[test]
    fn enable_if_return_type() {
        let p = parse("std::enable_if<!(false), void>::type internal::gemvx::kernel<int, int, __half, __half, __half, float, false, true, true, false, 7, false, cublasGemvParamsEx<int, cublasGemvTensorStridedBatched<__half const>, cublasGemvTensorStridedBatched<__half const>, cublasGemvTensorStridedBatched<__half>, float> >(cublasGemvParamsEx<int, cublasGemvTensorStridedBatched<__half const>, cublasGemvTensorStridedBatched<__half const>, cublasGemvTensorStridedBatched<__half>, float>)");
        assert!(!p.opaque, "{p:?}");
        assert_eq!(p.scope, vec!["internal", "gemvx"]);
        assert_eq!(p.base, "kernel");
        assert!(p.dtypes.contains(&DType::F16));
    }

    #[test]
    fn vendor_names() {
        let p = parse("nvjet_sm90_hsh_64x8_64x16_4x1_v_bz_bias_TNT");
        let v = p.vendor.unwrap();
        assert_eq!(v.library, "nvjet");
        assert_eq!(v.sm, Some(90));
        assert_eq!(v.tiles, vec!["64x8", "64x16", "4x1"]);
        assert_eq!(v.layout.as_deref(), Some("TNT"));
        assert!(v.flags.contains(&"bias".to_string()));
        assert_eq!(p.dtypes, vec![DType::F16]);

        let c = parse("void cutlass::Kernel2<cutlass_75_tensorop_bf16_s1688gemm_bf16_128x128_tn_align1>(cutlass_75_tensorop_bf16_s1688gemm_bf16_128x128_tn_align1::Params)");
        let v = c.vendor.unwrap();
        assert_eq!(v.library, "cutlass");
        assert_eq!(v.tiles, vec!["128x128"]);
        assert_eq!(v.layout.as_deref(), Some("tn"));
        assert_eq!(c.dtypes, vec![DType::BF16]);

        let a = parse("ampere_fp16_s16816gemm_fp16_128x128_ldg8_f2f_stages_32x5_tn");
        assert_eq!(a.vendor.as_ref().unwrap().library, "cublas");
        assert_eq!(a.vendor.unwrap().layout.as_deref(), Some("tn"));

        let n = parse("ncclDevKernel_AllReduce_Sum_f16_RING_LL(ncclDevKernelArgsStorage<4096ul>)");
        assert_eq!(n.vendor.unwrap().library, "nccl");
        assert_eq!(
            parse("triton_poi_fused_add_0").vendor.unwrap().library,
            "triton"
        );
        assert_eq!(
            parse("cudnn_generated_fort_native_sdpa_sm80_flash_fprop_wmma_f16_knob_35_16x128x128_1x4x1_cga1x1x1_kernel0_0").vendor.unwrap().library,
            "flash"
        );
    }

    #[test]
    fn garbage_is_opaque_not_an_error() {
        for s in [
            "",
            "<<<",
            "void (",
            "a b c ) (",
            "\u{fffd}\u{fffd}",
            "operator<",
        ] {
            let p = parse(s);
            assert!(p.opaque || !p.base.is_empty(), "{s:?} -> {p:?}");
        }
    }
}
