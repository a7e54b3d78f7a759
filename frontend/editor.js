// The demo's code editor: CodeMirror 6 with Python highlighting, mirrored into a plain
// <textarea> so the form posts (and works without JavaScript) exactly as before.
import { basicSetup, EditorView } from "codemirror";
import { python } from "@codemirror/lang-python";
import { indentUnit } from "@codemirror/language";

// CodeMirror styles itself with <style> elements it adds at run time. The page's Content Security
// Policy admits only those carrying the response's nonce, which the page puts on the <script> tag
// that loads this bundle: read it there while the bundle runs (a nonce is hidden from the DOM's
// attributes once parsed, but not from scripts).
const styleNonce = document.currentScript ? document.currentScript.nonce : "";

export function attach(textarea) {
  const view = new EditorView({
    doc: textarea.value,
    extensions: [
      basicSetup,
      python(),
      indentUnit.of("    "),
      EditorView.cspNonce.of(styleNonce),
      EditorView.contentAttributes.of({ "aria-label": textarea.getAttribute("aria-label") || "Python module" }),
      EditorView.updateListener.of((update) => {
        if (update.docChanged) textarea.value = update.state.doc.toString();
      }),
    ],
  });
  textarea.hidden = true;
  textarea.insertAdjacentElement("afterend", view.dom);
  return {
    view,
    setValue(text) {
      view.dispatch({ changes: { from: 0, to: view.state.doc.length, insert: text } });
    },
  };
}
