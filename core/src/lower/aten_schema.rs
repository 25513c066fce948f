//! libtorch's aten operator registry without libtorch: every schema of libtorch 2.11
//! (`data/aten_schemas.txt.gz`, extracted from its headers by `tools/aten_schemas.sh`), a
//! parser for the schema language (`aten::add.Tensor(Tensor self, Tensor other, *, Scalar
//! alpha=1) -> Tensor`), and the resolution of a recorded call to one overload by the
//! recorded arguments' kinds and values.
//!
//! Kineto records an op's name without its overload and every schema argument in order
//! (keyword-only ones included), each as a tensor dtype, "Scalar", "ScalarList",
//! "TensorList" or "" (absent). Resolution keeps the overloads with as many arguments whose
//! types admit what was recorded, scores how well each value fits (an integer for an `int`,
//! absent for an optional), and takes the best, preferring the plain overload over `.out`
//! forms and registry order after that. (The same-run Execution Traces' `op_schema` agree
//! with this on every op they name: tests/schemas.rs.)
//!
//! Invariant: resolution is a pure function of the embedded registry and the recorded
//! arguments; it returns a schema whose every argument admits what was recorded, or the
//! reason none does.

use nom::{
    branch::alt,
    bytes::complete::{tag, take_while, take_while1},
    character::complete::{char, digit0, multispace0},
    combinator::{map, opt, recognize},
    multi::separated_list0,
    sequence::{delimited, preceded},
    IResult, Parser,
};
use std::collections::HashMap;
use std::sync::OnceLock;

/// The element type of a schema argument or return.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum SchemaType {
    Tensor,
    Int,
    SymInt,
    Float,
    Bool,
    Scalar,
    ScalarType,
    Layout,
    Device,
    MemoryFormat,
    Str,
    Generator,
    Dimname,
    /// `T?`.
    Optional(Box<SchemaType>),
    /// `T[]` or `T[N]`.
    List(Box<SchemaType>, Option<usize>),
    /// Any other base type (Storage, Stream, Any, ...), by name.
    Other(String),
}

impl SchemaType {
    fn base(name: &str) -> SchemaType {
        match name {
            "Tensor" => SchemaType::Tensor,
            "int" | "DeviceIndex" => SchemaType::Int,
            "SymInt" => SchemaType::SymInt,
            "float" => SchemaType::Float,
            "bool" => SchemaType::Bool,
            "Scalar" => SchemaType::Scalar,
            "ScalarType" => SchemaType::ScalarType,
            "Layout" => SchemaType::Layout,
            "Device" => SchemaType::Device,
            "MemoryFormat" => SchemaType::MemoryFormat,
            "str" => SchemaType::Str,
            "Generator" => SchemaType::Generator,
            "Dimname" => SchemaType::Dimname,
            other => SchemaType::Other(other.to_string()),
        }
    }

    /// The type without an outer `?`.
    pub fn inner(&self) -> &SchemaType {
        match self {
            SchemaType::Optional(t) => t,
            t => t,
        }
    }

    pub fn is_optional(&self) -> bool {
        matches!(self, SchemaType::Optional(_))
    }
}

impl std::fmt::Display for SchemaType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SchemaType::Tensor => f.write_str("Tensor"),
            SchemaType::Int => f.write_str("int"),
            SchemaType::SymInt => f.write_str("SymInt"),
            SchemaType::Float => f.write_str("float"),
            SchemaType::Bool => f.write_str("bool"),
            SchemaType::Scalar => f.write_str("Scalar"),
            SchemaType::ScalarType => f.write_str("ScalarType"),
            SchemaType::Layout => f.write_str("Layout"),
            SchemaType::Device => f.write_str("Device"),
            SchemaType::MemoryFormat => f.write_str("MemoryFormat"),
            SchemaType::Str => f.write_str("str"),
            SchemaType::Generator => f.write_str("Generator"),
            SchemaType::Dimname => f.write_str("Dimname"),
            SchemaType::Optional(t) => write!(f, "{t}?"),
            SchemaType::List(t, Some(n)) => write!(f, "{t}[{n}]"),
            SchemaType::List(t, None) => write!(f, "{t}[]"),
            SchemaType::Other(s) => f.write_str(s),
        }
    }
}

/// One argument of a schema.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SchemaArg {
    pub name: String,
    pub ty: SchemaType,
    /// The default value's text, as written in the schema.
    pub default: Option<String>,
    pub kwarg_only: bool,
    /// Written by the op (`Tensor(a!)`).
    pub mutable: bool,
}

/// One operator overload.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Schema {
    /// With namespace: "aten::add".
    pub name: String,
    /// "" for the default overload, else "Tensor", "out", ...
    pub overload: String,
    pub args: Vec<SchemaArg>,
    pub returns: Vec<SchemaType>,
    /// An out form with a CUDA kernel of its own. libtorch generates the others as "run
    /// the functional op, then copy into `out`" (tools/aten_schemas.sh tells them apart).
    pub cuda_out_kernel: bool,
}

impl Schema {
    /// "aten::add.Tensor" or "aten::mm".
    pub fn full_name(&self) -> String {
        if self.overload.is_empty() {
            self.name.clone()
        } else {
            format!("{}.{}", self.name, self.overload)
        }
    }
}

impl std::fmt::Display for Schema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}(", self.full_name())?;
        let mut star = false;
        for (i, a) in self.args.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            if a.kwarg_only && !star {
                f.write_str("*, ")?;
                star = true;
            }
            let ty = a.ty.to_string();
            if a.mutable {
                // The write annotation follows the base type's name: `Tensor(a!)[]`.
                let at = ty
                    .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                    .unwrap_or(ty.len());
                write!(f, "{}(a!){} {}", &ty[..at], &ty[at..], a.name)?;
            } else {
                write!(f, "{ty} {}", a.name)?;
            }
        }
        f.write_str(") -> ")?;
        let r: Vec<String> = self.returns.iter().map(|t| t.to_string()).collect();
        if r.len() == 1 {
            f.write_str(&r[0])
        } else {
            write!(f, "({})", r.join(", "))
        }
    }
}

fn ident(i: &str) -> IResult<&str, &str> {
    take_while1(|c: char| c.is_ascii_alphanumeric() || c == '_').parse(i)
}

/// `(a!)`, `(a)`, `(a -> *)`: the alias annotation; true when it marks a write.
fn alias(i: &str) -> IResult<&str, bool> {
    map(
        delimited(char('('), take_while(|c| c != ')'), char(')')),
        |s: &str| s.contains('!'),
    )
    .parse(i)
}

/// A type: base, alias annotation, `?`, `[N]`, `?` (`Tensor(a!)`, `Tensor?[]`, `int[1]?`).
fn schema_type(i: &str) -> IResult<&str, (SchemaType, bool)> {
    let (i, base) = ident(i)?;
    let (i, mutable) = opt(alias).parse(i)?;
    let (i, q1) = opt(char('?')).parse(i)?;
    let (i, list) = opt(delimited(char('['), digit0, char(']'))).parse(i)?;
    let (i, q2) = opt(char('?')).parse(i)?;
    let mut ty = SchemaType::base(base);
    if q1.is_some() {
        ty = SchemaType::Optional(Box::new(ty));
    }
    if let Some(n) = list {
        ty = SchemaType::List(Box::new(ty), n.parse().ok());
    }
    if q2.is_some() {
        ty = SchemaType::Optional(Box::new(ty));
    }
    Ok((i, (ty, mutable.unwrap_or(false))))
}

/// A default value: text up to the next top-level `,` or `)` (brackets and quotes nest).
fn default_value(i: &str) -> IResult<&str, &str> {
    let mut depth = 0i32;
    let mut quote: Option<char> = None;
    let mut escaped = false;
    for (k, c) in i.char_indices() {
        if escaped {
            escaped = false;
            continue;
        }
        match (quote, c) {
            (Some(_), '\\') => escaped = true,
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '"' | '\'') => quote = Some(c),
            (None, '[' | '(') => depth += 1,
            (None, ']') => depth -= 1,
            (None, ')') if depth == 0 => return Ok((&i[k..], i[..k].trim())),
            (None, ')') => depth -= 1,
            (None, ',') if depth == 0 => return Ok((&i[k..], i[..k].trim())),
            _ => {}
        }
    }
    Err(nom::Err::Error(nom::error::Error::new(
        i,
        nom::error::ErrorKind::TakeUntil,
    )))
}

enum ArgItem {
    Star,
    Arg(SchemaArg),
}

fn arg_item(i: &str) -> IResult<&str, ArgItem> {
    let star = map(char('*'), |_| ArgItem::Star);
    let arg = map(
        (
            schema_type,
            preceded(multispace0, ident),
            opt(preceded(
                (multispace0, char('='), multispace0),
                default_value,
            )),
        ),
        |((ty, mutable), name, default)| {
            ArgItem::Arg(SchemaArg {
                name: name.to_string(),
                ty,
                default: default.map(str::to_string),
                kwarg_only: false,
                mutable,
            })
        },
    );
    delimited(multispace0, alt((star, arg)), multispace0).parse(i)
}

fn return_item(i: &str) -> IResult<&str, SchemaType> {
    map(
        delimited(
            multispace0,
            (schema_type, opt(preceded(multispace0, ident))),
            multispace0,
        ),
        |((t, _), _)| t,
    )
    .parse(i)
}

fn returns(i: &str) -> IResult<&str, Vec<SchemaType>> {
    alt((
        delimited(
            char('('),
            separated_list0(char(','), return_item),
            char(')'),
        ),
        map(return_item, |t| vec![t]),
    ))
    .parse(i)
}

/// Parses one schema; `None` for text that is not one.
pub fn parse(text: &str) -> Option<Schema> {
    let full = recognize((ident, tag("::"), ident));
    let overload = opt(preceded(char('.'), ident));
    let args = delimited(char('('), separated_list0(char(','), arg_item), char(')'));
    let arrow = (multispace0, tag("->"), multispace0);
    let r: IResult<&str, _> = (full, overload, args, arrow, returns).parse(text.trim());
    let (rest, (name, overload, items, _, rets)) = r.ok()?;
    if !rest.trim().is_empty() {
        return None;
    }
    let mut kw = false;
    let mut args = Vec::new();
    for it in items {
        match it {
            ArgItem::Star => kw = true,
            ArgItem::Arg(mut a) => {
                a.kwarg_only = kw;
                args.push(a);
            }
        }
    }
    Some(Schema {
        name: name.to_string(),
        overload: overload.unwrap_or("").to_string(),
        args,
        returns: rets,
        cuda_out_kernel: false,
    })
}

/// The embedded registry: schemas by op name (with namespace), in registry order.
pub struct Registry {
    pub version: String,
    by_name: HashMap<String, Vec<Schema>>,
    pub count: usize,
}

impl Registry {
    fn load(text: &str) -> Registry {
        let mut by_name: HashMap<String, Vec<Schema>> = HashMap::new();
        let mut version = String::new();
        let mut count = 0;
        for line in text.lines() {
            if let Some(h) = line.strip_prefix("# libtorch ") {
                version = h.split_whitespace().next().unwrap_or("").to_string();
                continue;
            }
            let (schema, flags) = line.split_once('\t').unwrap_or((line, ""));
            if let Some(mut s) = parse(schema) {
                s.cuda_out_kernel = flags.contains("cuda_out=True");
                by_name.entry(s.name.clone()).or_default().push(s);
                count += 1;
            }
        }
        Registry {
            version,
            by_name,
            count,
        }
    }

    /// Every overload of `op` ("aten::add"), in registry order.
    pub fn overloads(&self, op: &str) -> &[Schema] {
        self.by_name.get(op).map(Vec::as_slice).unwrap_or(&[])
    }

    /// The overload `op.overload` ("aten::add", "out").
    pub fn find(&self, op: &str, overload: &str) -> Option<&Schema> {
        self.overloads(op).iter().find(|s| s.overload == overload)
    }

    /// The `.out` form of `s` that libtorch implements with a CUDA kernel of its own: the
    /// same arguments followed only by written keyword-only tensors, one per tensor return.
    /// Generated ones (run, then copy) are skipped: they would add copy kernels.
    pub fn real_out_variant(&self, s: &Schema) -> Option<&Schema> {
        let outs = s.returns.len();
        if outs == 0 || s.returns.iter().any(|r| *r != SchemaType::Tensor) {
            return None;
        }
        self.overloads(&s.name).iter().find(|o| {
            o.cuda_out_kernel
                && o.args.len() == s.args.len() + outs
                && o.args[..s.args.len()]
                    .iter()
                    .zip(&s.args)
                    .all(|(a, b)| a.ty == b.ty && a.name == b.name)
                && o.args[s.args.len()..]
                    .iter()
                    .all(|a| a.mutable && a.kwarg_only && a.ty == SchemaType::Tensor)
        })
    }
}

/// The registry of the libtorch kc's tier 3 is built against.
pub fn registry() -> &'static Registry {
    static REGISTRY: OnceLock<Registry> = OnceLock::new();
    REGISTRY.get_or_init(|| {
        use std::io::Read;
        let gz: &[u8] = include_bytes!("../../../data/aten_schemas.txt.gz");
        let mut text = String::new();
        // The embedded file is written by tools/aten_schemas.sh and checked by a test;
        // a broken copy leaves the registry empty, and every op is then refused by name.
        let _ = flate2::read::GzDecoder::new(gz).read_to_string(&mut text);
        Registry::load(&text)
    })
}

/// What the profiler recorded for one argument, as far as resolution needs it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Recorded<'a> {
    Tensor,
    TensorList,
    /// A scalar with its text ("1", "0.5", "True", "" when not recorded).
    Scalar(&'a str),
    /// A list of scalars ("[1, 1]").
    ScalarList(&'a str),
    None,
    /// Anything else, with its recorded type name.
    Other(&'a str),
}

impl<'a> Recorded<'a> {
    pub fn of(a: &'a kc_ir::OpArg) -> Recorded<'a> {
        use kc_ir::OpArg;
        match a {
            OpArg::Tensor(_) => Recorded::Tensor,
            OpArg::TensorList(_) | OpArg::OptionalTensorList(_) => Recorded::TensorList,
            OpArg::Scalar { value, .. } => Recorded::Scalar(value),
            OpArg::ScalarList { value, .. } => Recorded::ScalarList(value),
            OpArg::None => Recorded::None,
            OpArg::Other { ty } => Recorded::Other(ty),
        }
    }

    fn describe(&self) -> String {
        match self {
            Recorded::Tensor => "Tensor".into(),
            Recorded::TensorList => "TensorList".into(),
            Recorded::Scalar("") => "Scalar".into(),
            Recorded::Scalar(v) => format!("Scalar {v}"),
            Recorded::ScalarList(v) => format!("ScalarList {v}"),
            Recorded::None => "None".into(),
            Recorded::Other(t) => format!("{t:?}"),
        }
    }
}

/// What a scalar's text looks like.
#[derive(Clone, Copy, PartialEq)]
enum Lit {
    Int,
    Float,
    Bool,
    Unknown,
    Text,
}

fn lit(v: &str) -> Lit {
    let v = v.trim();
    if v.is_empty() {
        Lit::Unknown
    } else if matches!(v, "True" | "False" | "true" | "false") {
        Lit::Bool
    } else if v.parse::<i64>().is_ok() {
        Lit::Int
    } else if v.parse::<f64>().is_ok() {
        Lit::Float
    } else {
        Lit::Text
    }
}

/// How well a recorded argument fits a schema type: `None` when it cannot, else a score
/// (higher is a closer fit).
fn fit(r: Recorded<'_>, t: &SchemaType) -> Option<u32> {
    use SchemaType as T;
    if let T::Optional(inner) = t {
        return match r {
            Recorded::None => Some(3),
            r => fit(r, inner),
        };
    }
    match (r, t) {
        (Recorded::Tensor, T::Tensor) => Some(3),
        // An undefined tensor passed where the schema takes a plain Tensor (autograd
        // formulas do this for unused gradients).
        (Recorded::None, T::Tensor) => Some(1),
        // Kineto records strings and devices as absent, and older profilers other values
        // too: the arity still identifies the overload, and building the call decides
        // whether the value can be known (a default, the GPU the op ran on) or not.
        (Recorded::None, _) => Some(0),
        (Recorded::TensorList, T::List(e, _)) if matches!(e.inner(), T::Tensor) => Some(3),
        (Recorded::Scalar(v), t) => {
            let l = lit(v);
            match (l, t) {
                (Lit::Unknown, T::Int | T::SymInt | T::Float | T::Bool | T::Scalar) => Some(1),
                (Lit::Unknown, T::ScalarType | T::Layout | T::MemoryFormat | T::Device) => Some(1),
                (Lit::Int, T::Int | T::SymInt) => Some(3),
                (Lit::Int, T::ScalarType | T::Layout | T::MemoryFormat) => Some(2),
                (Lit::Int | Lit::Float, T::Float) => Some(2),
                (Lit::Int | Lit::Float | Lit::Bool, T::Scalar) => Some(2),
                (Lit::Bool, T::Bool) => Some(3),
                (Lit::Int, T::Bool) => Some(1),
                // A single integer where an int list is expected (`dim=1` for `int[1]`).
                (Lit::Int, T::List(e, _)) if matches!(**e, T::Int | T::SymInt) => Some(1),
                (Lit::Text | Lit::Unknown, T::Str) => Some(2),
                (Lit::Text, T::Device) => Some(2),
                _ => None,
            }
        }
        (Recorded::ScalarList(v), T::List(e, n)) => {
            let inner = v.trim().trim_start_matches('[').trim_end_matches(']');
            let items: Vec<&str> = inner
                .split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .collect();
            // The size of `int[N]` is a Python-side convenience (one int repeated); any
            // length reaches the kernel.
            let _ = n;
            let ok = items.iter().all(|x| {
                matches!(
                    (lit(x), e.inner()),
                    (Lit::Int, T::Int | T::SymInt | T::Float | T::Scalar)
                        | (Lit::Float, T::Float | T::Scalar)
                        | (Lit::Bool, T::Bool | T::Scalar)
                )
            });
            ok.then_some(if items.is_empty() { 1 } else { 3 })
        }
        (Recorded::Other(ty), T::Device) if ty.contains("Device") => Some(2),
        (Recorded::Other(ty), T::Str) if ty.contains("String") || ty == "str" => Some(2),
        _ => None,
    }
}

/// A recorded call resolved to one overload.
#[derive(Clone, Debug)]
pub struct Resolved {
    pub schema: &'static Schema,
    /// Other overloads that admitted the recorded arguments equally well.
    pub ties: usize,
}

/// Resolves `op` ("aten::add") called with `args` to one overload of the registry.
pub fn resolve(op: &str, args: &[Recorded<'_>]) -> Result<Resolved, String> {
    let reg = registry();
    let overloads = reg.overloads(op);
    if overloads.is_empty() {
        return Err(format!(
            "{op} is not in libtorch {}'s aten operator registry",
            reg.version
        ));
    }
    let score = |s: &Schema| -> Option<u32> {
        if s.args.len() != args.len() {
            return None;
        }
        s.args
            .iter()
            .zip(args)
            .map(|(a, r)| fit(*r, &a.ty))
            .sum::<Option<u32>>()
    };
    let mut best: Option<(u32, &'static Schema)> = None;
    let mut ties = 0;
    for s in overloads {
        let Some(sc) = score(s) else { continue };
        // The model called the functional or in-place form far more often than an `out=`
        // form of the same arity.
        let sc = sc * 2 + u32::from(!s.overload.contains("out"));
        match best {
            Some((b, _)) if b > sc => {}
            Some((b, _)) if b == sc => ties += 1,
            _ => {
                best = Some((sc, s));
                ties = 0;
            }
        }
    }
    match best {
        Some((_, schema)) => Ok(Resolved { schema, ties }),
        None => {
            let got: Vec<String> = args.iter().map(Recorded::describe).collect();
            let arities: Vec<String> = overloads
                .iter()
                .map(|s| s.args.len().to_string())
                .collect::<std::collections::BTreeSet<_>>()
                .into_iter()
                .collect();
            Err(format!(
                "no overload of {op} takes the recorded ({}) ({} arguments recorded; its overloads take {})",
                got.join(", "),
                args.len(),
                arities.join(" or ")
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_embedded_registry_is_libtorchs() {
        let r = registry();
        assert_eq!(r.version, "2.11.0");
        // Every line of the file parses (tools/aten_schemas.sh wrote 3194).
        assert_eq!(r.count, 3194);
        let bn = r.find("aten::native_batch_norm", "").unwrap();
        assert_eq!(bn.args.len(), 8);
        assert_eq!(
            bn.args[1].ty,
            SchemaType::Optional(Box::new(SchemaType::Tensor))
        );
        assert_eq!(bn.returns.len(), 3);
        let out = r.real_out_variant(bn).unwrap();
        assert_eq!(out.overload, "out");
        // native_layer_norm.out is generated as "run, then copy": not a real out form.
        let ln = r.find("aten::native_layer_norm", "").unwrap();
        assert!(r.real_out_variant(ln).is_none());
        let mm = r.find("aten::mm", "").unwrap();
        assert_eq!(r.real_out_variant(mm).unwrap().overload, "out");
    }

    #[test]
    fn schema_language() {
        let s = parse("aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor")
            .unwrap();
        assert_eq!(s.full_name(), "aten::add.Tensor");
        assert!(s.args[2].kwarg_only && s.args[2].default.as_deref() == Some("1"));
        let s = parse("aten::index.Tensor_out(Tensor self, Tensor?[] indices, *, Tensor(a!) out) -> Tensor(a!)").unwrap();
        assert_eq!(
            s.args[1].ty,
            SchemaType::List(
                Box::new(SchemaType::Optional(Box::new(SchemaType::Tensor))),
                None
            )
        );
        assert!(s.args[2].mutable);
        let s = parse("aten::mean.dim(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor").unwrap();
        assert_eq!(
            s.args[1].ty,
            SchemaType::Optional(Box::new(SchemaType::List(
                Box::new(SchemaType::Int),
                Some(1)
            )))
        );
        let s = parse("aten::split_with_sizes(Tensor(a -> *) self, SymInt[] split_sizes, int dim=0) -> Tensor(a)[]").unwrap();
        assert_eq!(
            s.returns,
            vec![SchemaType::List(Box::new(SchemaType::Tensor), None)]
        );
        let s = parse(r#"aten::gelu(Tensor self, *, str approximate="none") -> Tensor"#).unwrap();
        assert_eq!(s.args[1].default.as_deref(), Some("\"none\""));
        let s = parse("aten::_flash_attention_forward(Tensor query, Tensor key, Tensor value, Tensor? cum_seq_q, Tensor? cum_seq_k, SymInt max_q, SymInt max_k, float dropout_p, bool is_causal, bool return_debug_mask, *, float? scale=None, SymInt? window_size_left=None, SymInt? window_size_right=None, Tensor? seqused_k=None, Tensor? alibi_slopes=None) -> (Tensor output, Tensor softmax_logsumexp, Tensor rng_state, Tensor unused, Tensor debug_attn_mask)").unwrap();
        assert_eq!((s.args.len(), s.returns.len()), (15, 5));
        assert!(parse("not a schema").is_none());
        assert!(parse("aten::x(Tensor self) -> Tensor trailing junk (").is_none());
    }

    #[test]
    fn overloads_by_recorded_kinds() {
        use Recorded as R;
        let t = R::Tensor;
        let r = resolve("aten::add", &[t, t, R::Scalar("1")]).unwrap();
        assert_eq!(r.schema.overload, "Tensor");
        let r = resolve("aten::add", &[t, R::Scalar("2"), R::Scalar("1")]).unwrap();
        assert_eq!(r.schema.overload, "Scalar");
        let r = resolve(
            "aten::sum",
            &[t, R::ScalarList("[1]"), R::Scalar("False"), R::None],
        )
        .unwrap();
        assert_eq!(r.schema.overload, "dim_IntList");
        let r = resolve("aten::div", &[t, t, R::Scalar("floor")]).unwrap();
        assert_eq!(r.schema.overload, "Tensor_mode");
        // The model's own `out=` call records the out tensor as one more argument.
        let r = resolve("aten::mm", &[t, t, t]).unwrap();
        assert_eq!(r.schema.overload, "out");
        let e = resolve("aten::mm", &[t]).unwrap_err();
        assert!(e.contains("1 arguments recorded"), "{e}");
        let e = resolve("aten::frobnicate", &[t]).unwrap_err();
        assert!(e.contains("registry"), "{e}");
    }
}
