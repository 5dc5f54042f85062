"""The ranked table sorts itself in the browser: a few lines of inline script, no library."""

# Click a column head to sort by it (numbers by value: "$1.2k", "23.6 h", "5.78M", "90%").
SORT_SCRIPT = """
(function(){
  const scale = {k:1e3, M:1e6, G:1e9, T:1e12};
  function key(cell){
    const text = cell.textContent.replace(/,/g, '');
    const m = text.match(/-?[0-9]+(?:\\.[0-9]+)?(?:e[-+]?[0-9]+)?/i);
    if (!m) return null;
    const after = text.slice(m.index + m[0].length, m.index + m[0].length + 1);
    return parseFloat(m[0]) * (scale[after] || 1);
  }
  document.querySelectorAll('table.sortable').forEach(function(table){
    table.querySelectorAll('th').forEach(function(th, column){
      th.classList.add('sortable');
      th.addEventListener('click', function(){
        const body = table.tBodies[0];
        const rows = Array.from(body.rows);
        const up = th.dataset.order !== 'asc';
        rows.sort(function(a, b){
          const x = key(a.cells[column]), y = key(b.cells[column]);
          const cmp = (x !== null && y !== null) ? x - y
            : a.cells[column].textContent.localeCompare(b.cells[column].textContent);
          return up ? cmp : -cmp;
        });
        th.dataset.order = up ? 'asc' : 'desc';
        rows.forEach(function(row){ body.appendChild(row); });
      });
    });
  });
})();
"""
