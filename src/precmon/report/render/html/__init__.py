"""The standalone HTML page of a report (`page.render_html`) and the inline SVG chart it draws
(`depthchart`): no JavaScript, no library, every string from the file escaped."""
