//! TypeScript functions: the types are stripped (and TypeScript-only syntax such as `enum`
//! turned into JavaScript) by oxc when the function is saved and when it is deployed, and the
//! JavaScript runs in the same QuickJS sandbox as any other function. A syntax error is told
//! with its line and column in the TypeScript source.

use oxc_allocator::Allocator;
use oxc_codegen::Codegen;
use oxc_parser::{ParseOptions, Parser};
use oxc_semantic::SemanticBuilder;
use oxc_span::SourceType;
use oxc_transformer::{TransformOptions, Transformer};
use std::path::Path;

/// The JavaScript of a TypeScript source: an ES module (`module`), or a classic script whose
/// last expression (or `main`) is the result.
pub fn to_javascript(file: &str, source: &str, module: bool) -> Result<String, String> {
    // A compiler bug must not take the request (or the deployment) down with it.
    std::panic::catch_unwind(|| compile(file, source, module)).unwrap_or_else(|_| {
        Err(format!(
            "TypeScript error in {file}: the compiler failed on this source"
        ))
    })
}

fn compile(file: &str, source: &str, module: bool) -> Result<String, String> {
    let allocator = Allocator::default();
    let source_type = SourceType::ts().with_module(module).with_script(!module);
    let parsed = Parser::new(&allocator, source, source_type)
        .with_options(ParseOptions {
            allow_return_outside_function: !module,
            ..ParseOptions::default()
        })
        .parse();
    if let Some(error) = parsed.diagnostics.first() {
        return Err(located(file, source, error));
    }
    let mut program = parsed.program;
    // Room for the bindings the transform adds; enum members evaluated, as enum lowering needs.
    let semantic = SemanticBuilder::new()
        .with_excess_capacity(2.0)
        .with_enum_eval(true)
        .build(&program);
    let scoping = semantic.semantic.into_scoping();
    let transformed = Transformer::new(&allocator, Path::new(file), &TransformOptions::default())
        .build_with_scoping(scoping, &mut program);
    if let Some(error) = transformed.diagnostics.first() {
        return Err(located(file, source, error));
    }
    Ok(Codegen::new().build(&program).code)
}

/// Whether a TypeScript source is an ES module (it imports or exports).
pub fn is_module(source: &str) -> bool {
    let allocator = Allocator::default();
    Parser::new(&allocator, source, SourceType::ts())
        .parse()
        .module_record
        .has_module_syntax
}

/// `<file>: line L, column C: <message>` for a diagnostic of `source`.
fn located(file: &str, source: &str, error: &oxc_diagnostics::OxcDiagnostic) -> String {
    let offset = error
        .labels
        .first()
        .map_or(0, |label| label.offset() as usize)
        .min(source.len());
    let before = &source[..source.floor_char_boundary(offset)];
    let line = before.matches('\n').count() + 1;
    let column = before
        .rsplit('\n')
        .next()
        .map_or(0, |text| text.chars().count())
        + 1;
    format!(
        "TypeScript error in {file}: line {line}, column {column}: {}",
        error.message
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn types_are_stripped_and_enums_become_javascript() {
        let js = to_javascript(
            "main.ts",
            "enum Unit { C, F }\ninterface In { c: number }\n\
             function main(input: In): number { return input.c * 9 / 5 + 32 + Unit.F; }",
            false,
        )
        .expect("compiles");
        assert!(
            !js.contains("interface") && !js.contains(": number"),
            "{js}"
        );
        assert!(js.contains("function main(input)"), "{js}");
        assert!(js.contains("Unit[\"F\"]") || js.contains("Unit.F"), "{js}");
    }

    #[test]
    fn a_module_keeps_its_exports_and_a_script_its_last_expression() {
        let module = "import { k } from './k';\nexport default (x: number): number => x * k;";
        assert!(is_module(module));
        let js = to_javascript("main.ts", module, true).expect("compiles");
        assert!(js.contains("export default"), "{js}");
        let script = "const a: number = 2;\na * 21";
        assert!(!is_module(script));
        let js = to_javascript("main.ts", script, false).expect("compiles");
        assert!(js.trim_end().ends_with("a * 21;"), "{js}");
    }

    #[test]
    fn errors_say_where() {
        let error = to_javascript("main.ts", "const a: number = 1;\nconst b: = 2;", false)
            .expect_err("a syntax error");
        assert!(error.contains("main.ts: line 2, column 10"), "{error}");
    }
}
