// Live decision feed: new decisions arrive over SSE and go to the top of
// the table. The page works without this script (reload to see more).
(function () {
  "use strict";
  var live = document.getElementById("live");
  var body = document.querySelector("#feed tbody");
  if (!live || !body || !window.EventSource) return;
  var es = new EventSource(live.getAttribute("data-stream"));
  var cols = ["time", "agent", "upstream", "tool", "decision", "reason"];
  es.addEventListener("decision", function (msg) {
    var d = JSON.parse(msg.data);
    var empty = body.querySelector("tr.empty");
    if (empty) empty.remove();
    var tr = document.createElement("tr");
    tr.className = "d-" + d.decision + " fresh";
    cols.forEach(function (c) {
      var td = document.createElement("td");
      td.textContent = d[c] || "";
      tr.appendChild(td);
    });
    var td = document.createElement("td");
    var a = document.createElement("a");
    a.href = live.getAttribute("data-calls") + encodeURIComponent(d.txn_id);
    a.textContent = d.txn_id.length > 16 ? d.txn_id.slice(0, 16) + "…" : d.txn_id;
    td.appendChild(a);
    tr.appendChild(td);
    body.insertBefore(tr, body.firstChild);
    while (body.rows.length > 200) body.deleteRow(body.rows.length - 1);
  });
  live.textContent = "Live: new decisions appear at the top.";
})();
