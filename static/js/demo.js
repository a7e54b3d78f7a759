// The demo form: a CodeMirror editor over the source textarea, and an example picker that loads
// a problem's source without a page reload. Without JavaScript both still work as plain forms.
const textarea = document.getElementById("id_source");
const picker = document.getElementById("example");
let editor = null;

if (textarea && window.CourtEditor) {
  textarea.setAttribute("aria-label", "PyTorch module source");
  editor = window.CourtEditor.attach(textarea);
  editor.view.dom.id = "editor";
  // The browser would refuse the hidden textarea's empty value without showing why: the server
  // answers instead, beside the field, in words that say what to do.
  textarea.form.noValidate = true;
}

if (picker) {
  picker.addEventListener("change", async () => {
    if (!picker.value) return;
    const response = await fetch(`/problems/${picker.value}/source.py`);
    if (!response.ok) return;
    const source = await response.text();
    if (editor) editor.setValue(source);
    textarea.value = source;
  });
}
