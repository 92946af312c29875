// Contestant and judge text is untrusted: it is rendered as Markdown and then
// sanitised, so no script, event handler, form, frame or remote resource from
// model output can run or load. The CSP in tauri.conf.json is the second wall.
import DOMPurify from 'dompurify';
import { Marked } from 'marked';

const marked = new Marked({ gfm: true, breaks: false, async: false });

// Links open in the OS's browser or mail app (the opener plugin handles
// `target=_blank` clicks; the window may open only these schemes). In-page
// `#` links are dropped: the app's router owns the hash. Images only as
// inline data.
const SAFE_LINK = /^(?:https?:|mailto:)/i;
const SAFE_IMAGE = /^data:image\/(?:png|gif|jpeg|webp);/i;

const purifier = DOMPurify();
purifier.addHook('afterSanitizeAttributes', (node) => {
  if (node.tagName === 'A') {
    const href = node.getAttribute('href') ?? '';
    if (!SAFE_LINK.test(href)) {
      node.removeAttribute('href');
    } else {
      node.setAttribute('rel', 'noopener noreferrer nofollow');
      node.setAttribute('target', '_blank');
    }
  }
  if (node.tagName === 'IMG') {
    const src = node.getAttribute('src') ?? '';
    if (!SAFE_IMAGE.test(src)) {
      node.removeAttribute('src');
      node.removeAttribute('srcset');
    }
  }
});

const CONFIG = {
  FORBID_TAGS: [
    'style',
    'form',
    'input',
    'button',
    'textarea',
    'select',
    'iframe',
    'object',
    'embed',
    'video',
    'audio',
    'source',
    'picture',
    'link',
    'meta',
    'base',
    'svg',
    'math',
  ],
  FORBID_ATTR: ['style', 'srcset', 'action', 'formaction', 'background', 'poster', 'xlink:href'],
  ALLOW_DATA_ATTR: false,
};

/** Markdown to sanitised HTML, safe to assign to innerHTML. */
export function renderMarkdown(text: string): string {
  const html = marked.parse(text) as string;
  return purifier.sanitize(html, CONFIG);
}
