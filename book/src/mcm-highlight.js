// Highlights the book's ```mcm blocks: mdBook's highlight.js does not know
// the language, so register it and highlight those blocks again. The words
// are the grammar's (grammar/mcm.pest); the tests check that none is missing.
(function () {
  if (typeof hljs === "undefined") {
    return;
  }
  hljs.registerLanguage("mcm", function (hljs) {
    return {
      name: "mcm",
      keywords: {
        keyword:
          "use let topology constraint partition test chips include set link for in if else forall exists where " +
          "and or not onto as require maximize minimize evaluate with place expect valid violates " +
          "satisfiable unsatisfiable graph native",
        literal: "true false",
        built_in: "sum count max min chip flows longest_path hops nodes edges chips links",
        type: "int bool str bytes rate flop flop_rate time",
      },
      contains: [
        hljs.COMMENT("//", "$"),
        hljs.QUOTE_STRING_MODE,
        {
          className: "number",
          begin:
            /\b\d[\d_]*(\.\d+)?([eE][+-]?\d+)?(\s*(KiB|MiB|GiB|TiB|KB|MB|GB|TB|B|PFLOP|TFLOP|GFLOP|MFLOP|KFLOP|FLOP|ms|us|ns|s)(\/s)?)?(?![A-Za-z0-9_])/,
        },
        { className: "operator", begin: /<->|->|==|!=|<=|>=|\.\./ },
      ],
    };
  });
  document.querySelectorAll("code.language-mcm").forEach(function (block) {
    hljs.highlightBlock(block);
  });
})();
