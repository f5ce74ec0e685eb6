/**
 * The house's own lint rules, run by `deno lint` (deno.json's lint.plugins):
 *
 * - `max-function-lines`: a function in the product's code (functions/, protocol/, server/,
 *   sdk/, key-scanner/) fits in a reader's head, at most 150 lines; a longer one is split by
 *   concept.
 */

const MAX_FUNCTION_LINES = 150;
const PRODUCT_CODE = /\/(functions|protocol|server|sdk|key-scanner)\//;

const plugin: Deno.lint.Plugin = {
  name: "house",
  rules: {
    "max-function-lines": {
      create(context) {
        if (!PRODUCT_CODE.test(context.filename)) return {};
        const check = (node: Deno.lint.Node) => {
          const lines = context.sourceCode.getText(node).split("\n").length;
          if (lines > MAX_FUNCTION_LINES) {
            context.report({
              node,
              message:
                `A function of ${lines} lines: split it by concept (at most ${MAX_FUNCTION_LINES}).`,
            });
          }
        };
        return {
          FunctionDeclaration: check,
          FunctionExpression: check,
          ArrowFunctionExpression: check,
        };
      },
    },
  },
};

export default plugin;
