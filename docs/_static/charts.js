// Draws every Altair chart of the page (a Vega-Lite spec kept in the notebook) with Vega-Embed, from the site's own
// bundle (vega-bundle.js): no network.
document.addEventListener('DOMContentLoaded', () => {
  for (const div of document.querySelectorAll('div.vega-chart')) {
    const spec = JSON.parse(div.querySelector('script[type="application/json"]').textContent);
    vegaEmbed(div, spec, {actions: false, renderer: 'svg'}).catch(e => {
      div.textContent = 'chart not drawn: ' + e;
      console.error(e);
    });
  }
});
