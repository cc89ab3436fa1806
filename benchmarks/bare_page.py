"""The floor issue 47's times are read against (`python -m benchmarks.feel --bare`): a bare Streamlit page with one
control of each kind and one small Plotly chart that follows them, none of the app's frame, pages or figures. Every
change here is Streamlit's own work, in the server and in the browser."""
import plotly.graph_objects as go
import streamlit as st

n = st.slider("Points", 2, 50, 10, key="n")
shape = st.selectbox("Shape", ["square", "cube", "root"], key="shape")
dashed = st.toggle("Dashed", key="dashed")
title = st.text_input("Title", "A curve", key="title")
power = {"square": 2, "cube": 3, "root": 0.5}[shape]
st.write(f"{n} points of x^{power}")
st.plotly_chart(go.Figure(go.Scatter(y=[i ** power for i in range(n)], line_dash="dash" if dashed else "solid"),
                          layout={"title": {"text": title}, "height": 360}), theme=None)
