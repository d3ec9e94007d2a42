//! `#[simtape::test]`: a seed sweep as one `#[test]` function. Use it through the `simtape`
//! crate (its default feature `macros` re-exports it); this crate only rewrites the function,
//! and `simtape::testing::run_test` does the work, so the expansion names nothing but
//! `::simtape` and `::core` paths.

#![warn(missing_docs)]

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
/// - `seeds = EXPR`: the seeds, any `IntoIterator<Item = u64>` (default
///   `simtape::testing::SEEDS_DEFAULT`, `0..100`);
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
    expand_attribute(args.into(), item.into()).into()
}

/// The attribute on `proc_macro2` tokens (testable outside a compiler): the wrapper, or the
/// first problem as a `compile_error!` at its place.
fn expand_attribute(args: Tokens, item: Tokens) -> Tokens {
    let parsed = syn::parse2::<ItemFn>(item).and_then(|function| {
        let pairs = Punctuated::<MetaNameValue, Token![,]>::parse_terminated.parse2(args)?;
        expand(Args::from_pairs(pairs)?, function)
    });
    parsed.unwrap_or_else(syn::Error::into_compile_error)
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
            seeds: quote!(::simtape::testing::SEEDS_DEFAULT),
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

#[cfg(test)]
mod tests {
    use super::{expand_attribute, quote, Tokens};

    fn expanded(args: Tokens, item: Tokens) -> String {
        expand_attribute(args, item).to_string()
    }

    #[test]
    fn the_wrapper_calls_run_test_through_absolute_paths_only() {
        // Goal: the expansion names `::simtape`/`::core` paths only and keeps other attributes.
        let text = expanded(
            quote!(seeds = 3..9, tape = "tapes/{seed}.tape", builder = setup),
            quote!(
                #[ignore]
                async fn slow(host: Host) {
                    body(host).await
                }
            ),
        );
        for part in [
            "# [ignore] # [:: core :: prelude :: v1 :: test] fn slow ()",
            "async fn slow (host : Host)",
            ":: simtape :: testing :: run_test (",
            "tape : :: core :: option :: Option :: Some (\"tapes/{seed}.tape\")",
            "configure : :: core :: option :: Option :: Some (setup as fn (& mut :: simtape :: Builder))",
            "3 .. 9 , slow ,",
        ] {
            assert!(text.contains(part), "{part:?} not in {text}");
        }
        let defaults = expanded(
            quote!(),
            quote!(
                async fn quick(host: Host) {}
            ),
        );
        let default_seeds = ":: simtape :: testing :: SEEDS_DEFAULT , quick";
        assert!(defaults.contains(default_seeds), "{defaults}");
    }

    #[test]
    fn misuse_is_a_compile_error_that_says_what_to_write() {
        // Goal: each wrong shape or argument is one `compile_error!` naming the fix.
        let function = quote!(
            async fn f(host: Host) {}
        );
        let cases = [
            (
                quote!(seed = 3),
                function.clone(),
                "unknown argument `seed`: expected `seeds`, `tape` or `builder`",
            ),
            (
                quote!(seeds = 0..2, seeds = 0..3),
                function.clone(),
                "`seeds` is given twice",
            ),
            (
                quote!(tape = 3),
                function.clone(),
                "expected a string, e.g. `tape = ",
            ),
            (
                quote!(builder = || 3),
                function.clone(),
                "`builder` takes a function path",
            ),
            (
                quote!(),
                quote!(
                    fn f(host: Host) {}
                ),
                "takes an `async fn name(host: simtape::Host)`",
            ),
            (
                quote!(),
                quote!(
                    async fn f() {}
                ),
                "takes exactly one argument",
            ),
            (
                quote!(),
                quote!(
                    #[test]
                    async fn f(host: Host) {}
                ),
                "already makes a #[test]",
            ),
        ];
        for (args, item, message) in cases {
            let text = expanded(args, item);
            assert!(text.starts_with(":: core :: compile_error !"), "{text}");
            assert!(text.contains(message), "{message:?} not in {text}");
        }
    }
}
