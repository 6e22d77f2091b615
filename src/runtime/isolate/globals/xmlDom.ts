// DOMParser, XMLSerializer and the DOM's `Node` (its nodeType constants) for components whose
// code, or a package's browser build (the AWS SDK's XML parser), uses them as globals:
// @xmldom/xmldom, bundled only into those components (esbuild's `inject`,
// src/runtime/component/bundle.ts). One file: esbuild drops a second injected file's re-export
// from the same package.
export { DOMParser, XMLSerializer, Node } from "@xmldom/xmldom";
