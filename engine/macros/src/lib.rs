//! `#[simtape::test]`: a seed sweep as one `#[test]` function. Use it through the `simtape`
//! crate (its default feature `macros` re-exports it); this crate only rewrites the function,
//! and `simtape::testing::run_test` does the work, so the expansion names nothing but
//! `::simtape` and `::core` paths.

use proc_macro::TokenStream;
use proc_macro2::TokenStream as Tokens;
use quote::{quote, ToTokens};
use syn::parse::Parser;
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::{Expr, ExprLit, ExprPath, ItemFn, Lit, MetaNameValue, Token};

/// Runs an `async fn(host: simtape::Host)` as the main task of one simulation per seed, as one
/// `#[test]`; the first failing seed fails the test with the seed, where it panicked, the
/// command that replays it (`SIMTAPE_SEED=N cargo test NAME -- --exact`) and the path of its
/// tape, kept under `target/simtape/`. Passing seeds leave no file.
///
/// ```
/// use simtape::Host;
/// use std::time::Duration;
///
/// #[simtape::test(seeds = 0..200)]
/// async fn replies_within_five_seconds(host: Host) {
///     let waited_ms = host.rng("latency").below(5_000);
///     host.sleep(Duration::from_millis(waited_ms)).await;
///     assert!(host.now_ns() < 5_000_000_000, "waited {waited_ms} ms");
/// }
/// ```
///
/// Arguments, all optional:
/// - `seeds = EXPR`: the seeds, any `IntoIterator<Item = u64>` (default `0..100`);
///   `SIMTAPE_SEED=N` runs only `N`, `SIMTAPE_SEEDS=A..B` replaces them.
/// - `tape = "PATH"`: where a failing seed's tape goes, relative to the crate's directory,
///   with `{name}` and `{seed}` replaced (default `<target dir>/simtape/{name}-{seed}.tape`).
/// - `builder = PATH`: a `fn(&mut simtape::Builder)` that configures every seed's run
///   (capabilities, limits, start instant) before the seed and the tape are set.
///
/// The function may return `()` or `Result<(), E>` with `E: Display`; other attributes
/// (`#[ignore]`, `#[should_panic]`) stay on the generated test.
#[proc_macro_attribute]
pub fn test(args: TokenStream, item: TokenStream) -> TokenStream {
    let function = syn::parse_macro_input!(item as ItemFn);
    let parsed = Punctuated::<MetaNameValue, Token![,]>::parse_terminated.parse(args);
    parsed
        .and_then(Args::from_pairs)
        .and_then(|args| expand(args, function))
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}

/// The attribute's arguments, as tokens for the expansion.
struct Args {
    seeds: Tokens,
    tape: Tokens,
    builder: Tokens,
}

impl Args {
    fn from_pairs(pairs: Punctuated<MetaNameValue, Token![,]>) -> syn::Result<Args> {
        let mut args = Args {
            seeds: quote!(0..100),
            tape: quote!(::core::option::Option::None),
            builder: quote!(::core::option::Option::None),
        };
        let mut seen: Vec<String> = Vec::new();
        for pair in pairs {
            let key = pair.path.to_token_stream().to_string();
            if seen.contains(&key) {
                return Err(syn::Error::new(
                    pair.path.span(),
                    format!("`{key}` is given twice"),
                ));
            }
            let value = pair.value;
            match key.as_str() {
                "seeds" => args.seeds = value.to_token_stream(),
                "tape" => {
                    let path =
                        string_literal(&value, "tape = \"target/simtape/{name}-{seed}.tape\"")?;
                    args.tape = quote!(::core::option::Option::Some(#path));
                }
                "builder" => {
                    let Expr::Path(ExprPath { path, .. }) = value else {
                        return Err(syn::Error::new(
                            value.span(),
                            "`builder` takes a function path, e.g. `builder = setup`",
                        ));
                    };
                    args.builder = quote!(::core::option::Option::Some(
                        #path as fn(&mut ::simtape::Builder)
                    ));
                }
                _ => {
                    return Err(syn::Error::new(
                        pair.path.span(),
                        format!("unknown argument `{key}`: expected `seeds`, `tape` or `builder`"),
                    ))
                }
            }
            seen.push(key);
        }
        Ok(args)
    }
}

fn string_literal(value: &Expr, example: &str) -> syn::Result<String> {
    match value {
        Expr::Lit(ExprLit {
            lit: Lit::Str(text),
            ..
        }) => Ok(text.value()),
        _ => Err(syn::Error::new(
            value.span(),
            format!("expected a string, e.g. `{example}`"),
        )),
    }
}

/// Checks the function's shape and wraps it: the original, unchanged, becomes the body
/// passed to `run_test` inside a `#[test] fn` of the same name.
fn expand(args: Args, mut function: ItemFn) -> syn::Result<Tokens> {
    let signature = &function.sig;
    if signature.asyncness.is_none() {
        return Err(syn::Error::new(
            signature.fn_token.span(),
            "#[simtape::test] takes an `async fn name(host: simtape::Host)`",
        ));
    }
    if signature.inputs.len() != 1 || !signature.generics.params.is_empty() {
        return Err(syn::Error::new(
            signature.span(),
            "#[simtape::test] takes exactly one argument, the `simtape::Host`, and no generics",
        ));
    }
    if let Some(attribute) = function.attrs.iter().find(|a| a.path().is_ident("test")) {
        return Err(syn::Error::new(
            attribute.span(),
            "#[simtape::test] already makes a #[test]; remove this one",
        ));
    }
    // Test attributes (`#[ignore]`, `#[should_panic]`, docs) belong to the generated test.
    let attributes = std::mem::take(&mut function.attrs);
    let visibility = std::mem::replace(&mut function.vis, syn::Visibility::Inherited);
    let name = function.sig.ident.clone();
    let Args {
        seeds,
        tape,
        builder,
    } = args;
    Ok(quote! {
        #(#attributes)*
        #[::core::prelude::v1::test]
        #visibility fn #name() {
            #function
            ::simtape::testing::run_test(
                ::simtape::testing::TestSpec {
                    path: ::core::concat!(::core::module_path!(), "::", ::core::stringify!(#name)),
                    manifest_dir: ::core::env!("CARGO_MANIFEST_DIR"),
                    tape: #tape,
                    configure: #builder,
                },
                #seeds,
                #name,
            )
        }
    })
}
