// GrasBot's reference chat page: how a site uses GET /ask/stream (docs/service.md, "The stream").
//
// - One EventSource per question, closed as soon as the answer ends (`done` or `failed`): an EventSource
//   left open reconnects by itself when the server ends the stream.
// - The server's failure event is `failed`. `error` on an EventSource is the browser's own (a lost
//   connection, a refused request): the answer is then lost, and the page says so and closes.
// - Everything the server sends is shown with textContent, never parsed as HTML.
(() => {
  "use strict";

  const meta = document.querySelector('meta[name="grasbot-api"]');
  const API = (meta && meta.content ? meta.content : "").replace(/\/+$/, "");
  const form = document.getElementById("ask");
  const input = document.getElementById("q");
  const turns = document.getElementById("turns");
  const template = document.getElementById("turn");

  // The conversation's id, once the server has issued one (`session_id` in its events); sent back with
  // the next question so that the bot remembers the previous turns.
  let sessionId = null;
  let current = null; // the EventSource of the answer under way, if any

  const FAILURES = {
    400: "La question est vide.",
    413: "La question est trop longue.",
    422: "La requête n'est pas valide.",
    502: "Le modèle a répondu une erreur.",
    503: "Le service n'est pas disponible pour l'instant.",
    504: "Le modèle a mis trop de temps à répondre.",
  };
  const LABELS = {
    supported: "appuyée par les sources",
    unsupported: "non appuyée",
    "wrong-citation": "citation erronée",
    abstention: "abstention",
    "no-claim": "sans affirmation",
  };

  function adoptSession(data) {
    if (data && typeof data.session_id === "string" && data.session_id) sessionId = data.session_id;
  }

  function newTurn(question) {
    const node = template.content.firstElementChild.cloneNode(true);
    node.querySelector(".question").textContent = question;
    turns.appendChild(node);
    const response = node.querySelector(".response");
    const status = node.querySelector(".status");
    return {
      node,
      append(text) {
        status.textContent = "";
        response.textContent += text;
      },
      setText(text) {
        response.textContent = text;
      },
      showSources(sources, grounded) {
        const badge = node.querySelector(".badge");
        badge.hidden = false;
        badge.className = "badge " + (grounded ? "grounded" : "ungrounded");
        badge.textContent = grounded ? "Réponse sourcée" : "Hors des notes : réponse non sourcée";
        const section = node.querySelector(".sources");
        const list = section.querySelector("ul");
        list.replaceChildren();
        for (const source of sources || []) {
          const item = document.createElement("li");
          item.dataset.slug = source.slug;
          const title = document.createElement(source.url ? "a" : "span");
          title.textContent = source.title || source.slug;
          if (source.url) title.href = source.url; // a page of the site (/portfolio/..., /competences/...)
          const type = document.createElement("span");
          type.className = "type";
          type.textContent = source.type ? ` (${source.type})` : "";
          item.append(title, type);
          list.appendChild(item);
        }
        section.hidden = list.children.length === 0;
      },
      showVerification(verification) {
        const section = node.querySelector(".verification");
        const list = section.querySelector("ol");
        list.replaceChildren();
        for (const sentence of (verification && verification.sentences) || []) {
          const item = document.createElement("li");
          item.dataset.label = sentence.label || "";
          const text = document.createElement("span");
          text.textContent = sentence.text || "";
          const label = document.createElement("span");
          label.className = "label label-" + String(sentence.label || "unknown").replace(/[^a-z-]/g, "");
          label.textContent = LABELS[sentence.label] || sentence.label || "?";
          item.append(text, label);
          list.appendChild(item);
        }
        const summary = verification && verification.summary;
        section.querySelector(".summary").textContent =
          typeof summary === "string" ? summary : verification && verification.status ? `Statut : ${verification.status}` : "";
        section.hidden = false;
      },
      end(state, message) {
        node.dataset.state = state;
        status.textContent = message || "";
      },
    };
  }

  function ask(question) {
    if (current) current.close(); // one answer at a time: a new question ends the previous one
    const turn = newTurn(question);
    const params = new URLSearchParams({ q: question });
    if (sessionId) params.set("session_id", sessionId);
    const source = new EventSource(`${API}/ask/stream?${params}`);
    current = source;
    let over = false;

    function finish(state, message) {
      over = true;
      source.close(); // the one thing that keeps the browser from asking again
      if (current === source) current = null;
      turn.end(state, message);
      form.querySelector("button").disabled = false;
    }
    const data = (event) => JSON.parse(event.data);

    source.addEventListener("sources", (event) => {
      const body = data(event);
      adoptSession(body);
      turn.showSources(body.sources, body.grounded);
      turn.end("streaming", "Rédaction de la réponse…");
    });
    source.addEventListener("token", (event) => turn.append(data(event).text));
    source.addEventListener("verification", (event) => turn.showVerification(data(event)));
    source.addEventListener("done", (event) => {
      const body = data(event);
      adoptSession(body);
      turn.setText(body.response);
      turn.showSources(body.sources, body.grounded);
      if (body.verification) turn.showVerification(body.verification);
      finish("done", "");
    });
    source.addEventListener("failed", (event) => {
      const body = data(event);
      adoptSession(body);
      if (Array.isArray(body.sources) && body.sources.length) turn.showSources(body.sources, body.grounded);
      finish("failed", `${FAILURES[body.status] || "La réponse a échoué."} (${body.error})`);
    });
    // The browser's own error: the connection was lost or refused. The answer is not resumed (the server
    // answers 204 to a reconnection), so stop here rather than wait for the browser to retry.
    source.onerror = () => {
      if (!over) finish("lost", "La connexion a été perdue : reposez la question.");
    };
  }

  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const question = input.value.trim();
    if (!question) return;
    form.querySelector("button").disabled = true;
    input.value = "";
    ask(question);
  });
})();
